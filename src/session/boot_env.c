/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The env bootstrap: rank and size from the launcher's variables, and a
 * rendezvous that rank 0 serves over TCP (boot_wire.h has the frames,
 * boot_env.h the parts).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "boot_env.h"
#include "base/addr.h"
#include "base/env.h"
#include "base/sock.h"
#include "rcc/rcc.h"
#include "rcc/util.h"

/* ------------------------------------------------------------------------ */
/* Environment                                                               */
/* ------------------------------------------------------------------------ */

static int env_int(const char *name, long lo, long hi, long *v, char *err, size_t errlen)
{
	unsigned long u;
	int rc = rcci_env_ulong(name, (unsigned long)lo, (unsigned long)hi, &u);

	if (rc == -EINVAL) {
		const char *s = getenv(name);
		char esc[64];
		rcc_text_escape(esc, sizeof(esc), s, strlen(s));
		rcci_boot_explain(err, errlen, "%s='%s': expected a number from %ld to %ld", name,
				  esc, lo, hi);
	}
	if (!rc)
		*v = (long)u;
	return rc;
}

/* Rank and size from the first family whose rank variable is set. */
static int env_rank_size(int *rank, int *size, char *err, size_t errlen)
{
	static const char *const fam[][2] = {
		{ "RCC_RANK", "RCC_WORLD_SIZE" },
		{ "RANK", "WORLD_SIZE" },
		{ "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE" },
		{ "PMI_RANK", "PMI_SIZE" },
		{ "SLURM_PROCID", "SLURM_NTASKS" },
	};
	long r, s;
	int rc;

	for (size_t i = 0; i < sizeof(fam) / sizeof(fam[0]); i++) {
		rc = env_int(fam[i][0], 0, RCC_BOOTSTRAP_MAX_RANKS - 1, &r, err, errlen);
		if (rc == -ENOENT)
			continue;
		if (rc)
			return rc;
		rc = env_int(fam[i][1], 1, RCC_BOOTSTRAP_MAX_RANKS, &s, err, errlen);
		if (rc == -ENOENT) {
			rcci_boot_explain(err, errlen, "%s is set but %s is not", fam[i][0],
					  fam[i][1]);
			rc = -EINVAL;
		}
		if (rc)
			return rc;
		if (r >= s) {
			rcci_boot_explain(err, errlen, "%s=%ld is not below %s=%ld", fam[i][0], r,
					  fam[i][1], s);
			return -EINVAL;
		}
		*rank = (int)r;
		*size = (int)s;
		return 0;
	}
	rcci_boot_explain(
		err, errlen,
		"no rank in the environment (RCC_RANK, RANK, OMPI_COMM_WORLD_RANK, PMI_RANK "
		"or SLURM_PROCID)");
	return -ENOENT;
}

static const char *env_either(const char *a, const char *b)
{
	const char *s = getenv(a);
	return s && *s ? s : getenv(b);
}

/* The secret's bytes, trailing white space (a file's newline) removed. */
static int env_secret(struct boot_env *e, char *err, size_t errlen)
{
	const char *val = getenv("RCC_JOB_SECRET"), *path = getenv("RCC_JOB_SECRET_FILE");
	size_t n = 0;

	if (val && *val && path && *path) {
		rcci_boot_explain(err, errlen,
				  "set RCC_JOB_SECRET or RCC_JOB_SECRET_FILE, not both");
		return -EINVAL;
	}
	if (val && *val) {
		n = strlen(val);
		if (n > SECRET_MAX)
			n = SECRET_MAX + 1;
		else
			memcpy(e->secret, val, n);
	} else if (path && *path) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			int rc = -errno;
			rcci_boot_explain(err, errlen, "cannot open RCC_JOB_SECRET_FILE: %s",
					  strerror(errno));
			return rc;
		}
		ssize_t r;
		while (n <= SECRET_MAX && (r = read(fd, e->secret + n, SECRET_MAX - n)) > 0)
			n += (size_t)r;
		if (n == SECRET_MAX) {
			uint8_t extra;
			if (read(fd, &extra, 1) == 1)
				n = SECRET_MAX + 1;
		}
		close(fd);
	} else {
		return 0;
	}
	if (n <= SECRET_MAX)
		while (n && (e->secret[n - 1] == '\n' || e->secret[n - 1] == '\r' ||
			     e->secret[n - 1] == ' ' || e->secret[n - 1] == '\t'))
			n--;
	if (n < SECRET_MIN || n > SECRET_MAX) {
		memset(e->secret, 0, sizeof(e->secret));
		rcci_boot_explain(err, errlen, "the job secret must be %d to %d bytes", SECRET_MIN,
				  SECRET_MAX);
		return -EINVAL;
	}
	e->secret_len = n;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Backend                                                                   */
/* ------------------------------------------------------------------------ */

static int env_allgather(struct rcc_bootstrap *bs, const void *blob, size_t len, void *out,
			 size_t stride, size_t *lens, int timeout_ms)
{
	struct boot_env *e = bs->priv;

	if (bs->size == 1) {
		if (len > stride) {
			rcci_boot_fail(bs, "our blob is longer than the %zu bytes asked for",
				       stride);
			return -EMSGSIZE;
		}
		if (len)
			memcpy(out, blob, len);
		lens[0] = len;
		return 0;
	}
	if (bs->rank == 0)
		return rcci_boot_root_allgather(bs, e, blob, len, out, stride, lens, timeout_ms);
	return rcci_boot_leaf_allgather(bs, e, blob, len, out, stride, lens, timeout_ms);
}

static int env_barrier(struct rcc_bootstrap *bs, int timeout_ms)
{
	size_t *lens = malloc((size_t)bs->size * sizeof(*lens));
	int rc;

	if (!lens) {
		rcci_boot_fail(bs, "out of memory");
		return -ENOMEM;
	}
	rc = env_allgather(bs, NULL, 0, NULL, 0, lens, timeout_ms);
	free(lens);
	return rc;
}

static int env_port(const struct rcc_bootstrap *bs)
{
	const struct boot_env *e = bs->priv;
	return bs->rank == 0 && bs->size > 1 ? e->port : -ENOTSUP;
}

static int env_local_host(const struct rcc_bootstrap *bs, char *buf, size_t len)
{
	const struct boot_env *e = bs->priv;

	if (!e->local_host[0])
		return -EAGAIN;
	if (strlen(e->local_host) >= len)
		return -ENOSPC;
	strcpy(buf, e->local_host);
	return 0;
}

/*
 * A key for the caller: HMAC of the secret over a domain label, the run id and
 * the caller's label. The run id is rank 0's, vouched for by its proof in the
 * welcome, so every rank derives the same key, and another run a different one.
 */
static int env_derive_key(const struct rcc_bootstrap *bs, const char *label,
			  uint8_t out[RCC_BOOTSTRAP_KEY_LEN])
{
	static const char domain[] = "rcc bootstrap derived key";
	const struct boot_env *e = bs->priv;

	if (!e->secret_len)
		return -ENOKEY;
	if (!e->round) /* a rank > 0 learns the run id as it joins */
		return -EAGAIN;
	struct rcci_iov parts[] = { { domain, sizeof(domain) },
				    { e->run, sizeof(e->run) },
				    { label, strlen(label) } };
	rcci_hmac_sha256(e->secret, e->secret_len, parts, 3, out);
	return 0;
}

static void env_close(struct rcc_bootstrap *bs)
{
	struct boot_env *e = bs->priv;

	if (e->lfd >= 0)
		close(e->lfd);
	for (int i = 0; i < e->npending; i++)
		rcci_boot_conn_free(e->pending[i]);
	if (e->ranks)
		for (int k = 1; k < bs->size; k++)
			rcci_boot_conn_free(e->ranks[k]);
	free(e->ranks);
	rcci_boot_conn_free(e->up);
	memset(e->secret, 0, sizeof(e->secret));
	memset(e->run, 0, sizeof(e->run));
	free(e);
}

static const struct boot_ops env_ops = {
	.name = "env",
	.allgather = env_allgather,
	.barrier = env_barrier,
	.rendezvous_port = env_port,
	.local_host = env_local_host,
	.derive_key = env_derive_key,
	.close = env_close,
};

static void host_of(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	if (ss->ss_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, buf,
			  (socklen_t)len);
	else
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, buf,
			  (socklen_t)len);
}

/*
 * Ranks > 0: the local address the kernel would use toward rank 0, known
 * before any packet is sent (a UDP socket's connect() only picks a route):
 * on a multi-homed host, the interface the other ranks can reach us on.
 */
static void route_host(struct boot_env *e)
{
	struct sockaddr_storage ss, me;
	socklen_t sl, ml = sizeof(me);
	int fd;

	if (rcci_addr_resolve(e->master, false, &ss, &sl))
		return; /* said again, with the reason, when we connect */
	fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (!connect(fd, (struct sockaddr *)&ss, sl) &&
	    !getsockname(fd, (struct sockaddr *)&me, &ml))
		host_of(&me, e->local_host, sizeof(e->local_host));
	close(fd);
}

/* Rank 0 listens on the master address, which must be one of its own. */
static int env_listen(struct boot_env *e, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int rc = rcci_addr_resolve(e->master, false, &ss, &sl);

	if (rc) {
		rcci_boot_explain(err, errlen, "cannot resolve the rendezvous address %s",
				  e->master);
		return rc;
	}
	e->lfd = rcci_sock_listen((struct sockaddr *)&ss, sl, 128, &e->port);
	if (e->lfd < 0) {
		rc = e->lfd;
		e->lfd = -1;
		rcci_boot_explain(err, errlen, "rank 0 cannot listen on %s for the rendezvous: %s",
				  e->master, rcc_strerror(rc));
		return rc;
	}
	host_of(&ss, e->local_host, sizeof(e->local_host));
	return 0;
}

int rcci_boot_env_open(struct rcc_bootstrap *bs, char *err, size_t errlen)
{
	struct boot_env *e;
	int rank, size, rc;
	long port;

	if ((rc = env_rank_size(&rank, &size, err, errlen)))
		return rc;
	if (!(e = calloc(1, sizeof(*e)))) {
		rcci_boot_explain(err, errlen, "out of memory");
		return -ENOMEM;
	}
	e->lfd = -1;
	if (size > 1) {
		const char *host = env_either("RCC_MASTER_ADDR", "MASTER_ADDR");
		const char *pname = getenv("RCC_MASTER_PORT") && *getenv("RCC_MASTER_PORT") ?
					    "RCC_MASTER_PORT" :
					    "MASTER_PORT";
		if (!host || !*host || !getenv(pname) || !*getenv(pname)) {
			rcci_boot_explain(
				err, errlen,
				"rank %d of %d: no rendezvous: set MASTER_ADDR and MASTER_PORT "
				"(or RCC_MASTER_ADDR and RCC_MASTER_PORT) to rank 0's address "
				"and a port, the same on every rank",
				rank, size);
			rc = -EDESTADDRREQ; /* a launcher, but not enough of one */
			goto err;
		}
		if ((rc = env_int(pname, rank == 0 ? 0 : 1, 65535, &port, err, errlen)))
			goto err;
		if (strlen(host) > 255) {
			rcci_boot_explain(err, errlen, "the master address is too long");
			rc = -EINVAL;
			goto err;
		}
		snprintf(e->master, sizeof(e->master), strchr(host, ':') ? "[%s]:%ld" : "%s:%ld",
			 host, port);
		if ((rc = env_secret(e, err, errlen)))
			goto err;
		/* the run id every rank learns from rank 0's authenticated welcome */
		if (rank == 0 && e->secret_len &&
		    getrandom(e->run, sizeof(e->run), 0) != (ssize_t)sizeof(e->run)) {
			rcci_boot_explain(err, errlen, "no random bytes for the run id");
			rc = -EIO;
			goto err;
		}
		if (rank == 0) {
			e->ranks = calloc((size_t)size, sizeof(*e->ranks));
			if (!e->ranks) {
				rcci_boot_explain(err, errlen, "out of memory");
				rc = -ENOMEM;
				goto err;
			}
			if ((rc = env_listen(e, err, errlen)))
				goto err_ranks;
		} else {
			route_host(e);
		}
	}
	bs->ops = &env_ops;
	bs->rank = rank;
	bs->size = size;
	bs->priv = e;
	return 0;

err_ranks:
	free(e->ranks);
err:
	memset(e->secret, 0, sizeof(e->secret));
	free(e);
	return rc;
}
