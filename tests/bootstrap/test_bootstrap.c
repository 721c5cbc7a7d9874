/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The bootstrap API in one process: the env backend's ranks are opened one
 * after the other (the environment is read only at open) and then run their
 * collectives on threads, as separate processes would. Rank 0 listens on an
 * ephemeral port. Hostile peers are raw sockets. Every wait is bounded by the
 * bootstrap's own timeouts, which these cases keep short.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "rcc/bootstrap.h"

#define MAXR 8
/* The rendezvous frames' version byte (BOOT_VERSION, src/session/boot_wire.h):
 * the raw peers below speak the protocol by hand. */
#define BV 2
#define STRIDE 64

static const char *const vars[] = {
	"RCC_BOOTSTRAP",
	"RCC_RANK",
	"RCC_WORLD_SIZE",
	"RANK",
	"WORLD_SIZE",
	"OMPI_COMM_WORLD_RANK",
	"OMPI_COMM_WORLD_SIZE",
	"PMI_RANK",
	"PMI_SIZE",
	"SLURM_PROCID",
	"SLURM_NTASKS",
	"RCC_MASTER_ADDR",
	"RCC_MASTER_PORT",
	"MASTER_ADDR",
	"MASTER_PORT",
	"RCC_JOB_SECRET",
	"RCC_JOB_SECRET_FILE",
	"PMIX_NAMESPACE",
	"PMIX_RANK",
};

static void clear_env(void)
{
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

static void setenvi(const char *name, int v)
{
	char b[16];
	snprintf(b, sizeof(b), "%d", v);
	setenv(name, b, 1);
}

/* Open rank k of n with the env backend; rank 0 first, on port 0. */
static int open_rank(int k, int n, int port, const char *secret, struct rcc_bootstrap **bs)
{
	char err[RCC_BOOTSTRAP_ERROR_MAX];
	struct rcc_bootstrap_attr a = { .backend = RCC_BOOTSTRAP_ENV };

	clear_env();
	setenvi("RCC_RANK", k);
	setenvi("RCC_WORLD_SIZE", n);
	setenv("RCC_MASTER_ADDR", "127.0.0.1", 1);
	setenvi("RCC_MASTER_PORT", port);
	if (secret)
		setenv("RCC_JOB_SECRET", secret, 1);
	int rc = rcc_bootstrap_open(&a, bs, err, sizeof(err));
	if (rc)
		fprintf(stderr, "  open rank %d: %s\n", k, err);
	clear_env();
	return rc;
}

struct rank_run {
	struct rcc_bootstrap *bs;
	int timeout_ms;
	int rounds;
	int rc;
	char out[MAXR * STRIDE];
	size_t lens[MAXR];
	char err[RCC_BOOTSTRAP_ERROR_MAX];
};

static void *run_rank(void *arg)
{
	struct rank_run *r = arg;
	char blob[STRIDE];
	int me = rcc_bootstrap_rank(r->bs);

	r->rc = 0;
	for (int round = 0; round < r->rounds && !r->rc; round++) {
		int len = snprintf(blob, sizeof(blob), "rank %d round %d", me, round);
		r->rc = rcc_bootstrap_allgather(r->bs, blob, (size_t)len, r->out, STRIDE, r->lens,
						r->timeout_ms);
		if (!r->rc)
			r->rc = rcc_bootstrap_barrier(r->bs, r->timeout_ms);
	}
	snprintf(r->err, sizeof(r->err), "%s", rcc_bootstrap_error(r->bs));
	return NULL;
}

/* Open n ranks (rank k with secrets[k]; secrets may be NULL), run them. */
static int job(int n, const char *const *secrets, int rounds, int timeout_ms, struct rank_run *runs)
{
	pthread_t th[MAXR];
	int port = 0;

	memset(runs, 0, sizeof(*runs) * (size_t)n);
	for (int k = 0; k < n; k++) {
		int rc = open_rank(k, n, port, secrets ? secrets[k] : NULL, &runs[k].bs);
		if (rc)
			return rc;
		if (k == 0)
			port = rcc_bootstrap_rendezvous_port(runs[0].bs);
		runs[k].timeout_ms = timeout_ms;
		runs[k].rounds = rounds;
	}
	for (int k = 0; k < n; k++)
		pthread_create(&th[k], NULL, run_rank, &runs[k]);
	for (int k = 0; k < n; k++)
		pthread_join(th[k], NULL);
	return 0;
}

static void close_all(struct rank_run *runs, int n)
{
	for (int k = 0; k < n; k++)
		rcc_bootstrap_close(runs[k].bs);
}

static void eight_ranks(void)
{
	static struct rank_run runs[8];

	CHECK_OK(job(8, NULL, 3, 10000, runs));
	for (int k = 0; k < 8; k++) {
		CHECK_MSG(runs[k].rc == 0, "rank %d: %s", k, runs[k].err);
		CHECK(!strcmp(rcc_bootstrap_backend_name(runs[k].bs), "env"));
		for (int j = 0; j < 8; j++) {
			char want[STRIDE];
			int l = snprintf(want, sizeof(want), "rank %d round 2", j);
			CHECK_EQ(runs[k].lens[j], l);
			CHECK(!memcmp(runs[k].out + j * STRIDE, want, (size_t)l));
		}
	}
	char host[64];
	CHECK_OK(rcc_bootstrap_local_host(runs[3].bs, host, sizeof(host)));
	CHECK(!strcmp(host, "127.0.0.1"));
	CHECK_EQ(rcc_bootstrap_rendezvous_port(runs[3].bs), -ENOTSUP);
	close_all(runs, 8);
}

static void with_secret(void)
{
	static struct rank_run runs[3];

	static const char *const s[] = { "0123456789abcdef-job-42", "0123456789abcdef-job-42",
					 "0123456789abcdef-job-42" };

	CHECK_OK(job(3, s, 2, 10000, runs));
	for (int k = 0; k < 3; k++)
		CHECK_MSG(runs[k].rc == 0, "rank %d: %s", k, runs[k].err);
	close_all(runs, 3);
}

static void wrong_secret(void)
{
	static const char *const s[] = { "the right secret, 1234", "a wrong secret, 12345" };
	struct rank_run r[2];

	CHECK_OK(job(2, s, 1, 1000, r));
	CHECK_EQ(r[1].rc, -EACCES);
	CHECK_MSG(strstr(r[1].err, "wrong job secret"), "rank 1 says: %s", r[1].err);
	CHECK_EQ(r[0].rc, -ETIMEDOUT);
	CHECK_MSG(strstr(r[0].err, "never arrived: rank 1") && strstr(r[0].err, "wrong job secret"),
		  "rank 0 says: %s", r[0].err);
	close_all(r, 2);
}

static void secret_on_one_side(void)
{
	static const char *const s[] = { NULL, "only rank 1 has it!" };
	struct rank_run r[2];

	CHECK_OK(job(2, s, 1, 1000, r));
	CHECK_EQ(r[1].rc, -EACCES);
	CHECK_MSG(strstr(r[1].err, "does not authenticate"), "rank 1 says: %s", r[1].err);
	CHECK_EQ(r[0].rc, -ETIMEDOUT);
	close_all(r, 2);
}

/* Rank 2 of 3 never comes: rank 0 names it, and rank 1 hears it from rank 0. */
static void never_arrives(void)
{
	struct rank_run r0 = { .timeout_ms = 800, .rounds = 1 }, r1 = r0;
	struct rcc_bootstrap *absent;
	pthread_t t0, t1;

	CHECK_OK(open_rank(0, 3, 0, NULL, &r0.bs));
	CHECK_OK(open_rank(1, 3, rcc_bootstrap_rendezvous_port(r0.bs), NULL, &r1.bs));
	CHECK_OK(open_rank(2, 3, rcc_bootstrap_rendezvous_port(r0.bs), NULL, &absent));
	pthread_create(&t0, NULL, run_rank, &r0);
	pthread_create(&t1, NULL, run_rank, &r1);
	pthread_join(t0, NULL);
	pthread_join(t1, NULL);
	CHECK_EQ(r0.rc, -ETIMEDOUT);
	CHECK_MSG(strstr(r0.err, "never arrived: rank 2"), "rank 0 says: %s", r0.err);
	CHECK_EQ(r1.rc, -ECANCELED);
	CHECK_MSG(strstr(r1.err, "rank 0 gave up") && strstr(r1.err, "never arrived: rank 2"),
		  "rank 1 says: %s", r1.err);
	/* after a failure the handle refuses collectives, keeping the reason */
	CHECK_EQ(rcc_bootstrap_barrier(r1.bs, 100), -ECANCELED);
	CHECK(strstr(rcc_bootstrap_error(r1.bs), "never arrived"));
	CHECK(strstr(rcc_last_error(), "never arrived")); /* a set-up call's words */
	rcc_bootstrap_close(absent);
	rcc_bootstrap_close(r0.bs);
	rcc_bootstrap_close(r1.bs);
}

static int raw_connect(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -1;
	}
	struct timeval tv = { .tv_sec = 5 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)); /* reads below are bounded */
	return fd;
}

/* Reads until the peer closes (0; a reset when it left our bytes unread) or
 * 5 s pass (-1). */
static int closed_by_peer(int fd)
{
	char b[256];
	ssize_t r;
	while ((r = read(fd, b, sizeof(b))) > 0)
		;
	return r == 0 || errno == ECONNRESET ? 0 : -1;
}

/* Reads n bytes (SO_RCVTIMEO bounds each read); whether they all came. */
static bool read_n(int fd, void *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, (uint8_t *)buf + got, n - got);
		if (r <= 0)
			return false;
		got += (size_t)r;
	}
	return true;
}

/* Garbage, a silent connection and a false rank 1 do not stop the real ranks. */
static void intruders(void)
{
	static struct rank_run runs[3];
	struct rcc_bootstrap *bs[3];
	pthread_t th[3];
	int port;

	memset(runs, 0, sizeof(runs));
	CHECK_OK(open_rank(0, 3, 0, NULL, &bs[0]));
	port = rcc_bootstrap_rendezvous_port(bs[0]);
	int silent = raw_connect(port), garbage = raw_connect(port), liar = raw_connect(port);
	CHECK(silent >= 0 && garbage >= 0 && liar >= 0);
	CHECK(write(garbage, "GET / HTTP/1.0\r\n\r\n", 18) == 18);
	/* a hello claiming rank 9 of 3 */
	uint8_t hello[8 + 72] = { 0x52, 0x42, BV, 2, 0, 0, 0, 72, 0, 0, 0, 9, 0, 0, 0, 3 };
	CHECK(write(liar, hello, sizeof(hello)) == (ssize_t)sizeof(hello));
	for (int k = 1; k < 3; k++)
		CHECK_OK(open_rank(k, 3, port, NULL, &bs[k]));
	for (int k = 0; k < 3; k++) {
		runs[k] = (struct rank_run){ .bs = bs[k], .timeout_ms = 10000, .rounds = 2 };
		pthread_create(&th[k], NULL, run_rank, &runs[k]);
	}
	for (int k = 0; k < 3; k++)
		pthread_join(th[k], NULL);
	for (int k = 0; k < 3; k++)
		CHECK_MSG(runs[k].rc == 0, "rank %d: %s", k, runs[k].err);
	CHECK_EQ(closed_by_peer(garbage), 0);
	CHECK_EQ(closed_by_peer(liar), 0);
	/* the silent one is let go once every rank is in */
	CHECK_EQ(closed_by_peer(silent), 0);
	close(silent);
	close(garbage);
	close(liar);
	close_all(runs, 3);
}

/*
 * Ranks 0 and 1 of 3 through the API, rank 2 a raw socket that plays by the
 * rules as far as the case wants: raw_start opens the ranks, starts rank 0,
 * reads the challenge and sends rank 2's hello (no secret in this job: a
 * nonce, no proof): -1 when the set-up failed (no thread started), else
 * whether rank 2 got its hello across. The case does what rank 2 does next;
 * raw_finish starts rank 1 (unless it is to stay away) and waits.
 */
struct raw_job {
	struct rank_run r0, r1;
	int fd;
	pthread_t t0, t1;
	struct timespec start, end;
};

static int raw_start(struct raw_job *j, int timeout_ms)
{
	static const uint8_t hello[8 + 72] = { 0x52, 0x42, BV, 2, 0, 0, 0, 72, 0,
					       0,    0,    2,  0, 0, 0, 3, 7,  7 };
	uint8_t in[8 + 33];

	memset(j, 0, sizeof(*j));
	j->r0 = (struct rank_run){ .timeout_ms = timeout_ms, .rounds = 1 };
	for (int k = 0; k < MAXR; k++) /* written only by an all-gather that succeeds */
		j->r0.lens[k] = SIZE_MAX;
	j->r1 = j->r0;
	j->fd = -1;
	if (open_rank(0, 3, 0, NULL, &j->r0.bs))
		return -1;
	int port = rcc_bootstrap_rendezvous_port(j->r0.bs);
	if (open_rank(1, 3, port, NULL, &j->r1.bs) || (j->fd = raw_connect(port)) < 0)
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &j->start);
	pthread_create(&j->t0, NULL, run_rank, &j->r0);
	return read_n(j->fd, in, sizeof(in)) &&
	       write(j->fd, hello, sizeof(hello)) == (ssize_t)sizeof(hello);
}

/* Seconds from raw_start to the ranks' return; rank 1 stays away when absent. */
static long raw_finish(struct raw_job *j, bool absent)
{
	if (!absent)
		pthread_create(&j->t1, NULL, run_rank, &j->r1);
	pthread_join(j->t0, NULL);
	if (!absent)
		pthread_join(j->t1, NULL);
	clock_gettime(CLOCK_MONOTONIC, &j->end);
	if (j->fd >= 0)
		close(j->fd);
	return (long)(j->end.tv_sec - j->start.tv_sec);
}

/* Rank 2 takes the welcome, sends its contribution for round 0 and dies. */
static bool raw_contribute_and_die(struct raw_job *j)
{
	static const uint8_t contrib[8 + 5] = { 0x52, 0x42, BV, 4, 0, 0, 0, 5, 0, 0, 0, 0, 'x' };
	uint8_t in[8 + 32];
	bool ok = read_n(j->fd, in, sizeof(in)) &&
		  write(j->fd, contrib, sizeof(contrib)) == (ssize_t)sizeof(contrib);

	close(j->fd);
	j->fd = -1;
	return ok;
}

static void raw_close(struct raw_job *j)
{
	rcc_bootstrap_close(j->r0.bs);
	rcc_bootstrap_close(j->r1.bs);
}

/*
 * Rank 2 of 3 joins (a valid hello, welcomed) and then says nothing more: rank
 * 0 names it as a rank that joined but sent nothing, within its timeout, and
 * rank 1 hears it from rank 0.
 */
static void joined_silent(void)
{
	static struct raw_job j;

	int st = raw_start(&j, 800);
	CHECK(st >= 0);
	long secs = raw_finish(&j, false);
	CHECK_EQ(st, 1);
	CHECK_EQ(j.r0.rc, -ETIMEDOUT);
	CHECK_MSG(strstr(j.r0.err, "joined but sent nothing: rank 2 (127.0.0.1:") &&
			  !strstr(j.r0.err, "never arrived"),
		  "rank 0 says: %s", j.r0.err);
	CHECK_EQ(j.r1.rc, -ECANCELED);
	CHECK_MSG(strstr(j.r1.err, "rank 0 gave up") &&
			  strstr(j.r1.err, "joined but sent nothing: rank 2 (127.0.0.1:"),
		  "rank 1 says: %s", j.r1.err);
	CHECK(secs < 5); /* the 0.8 s bound, not some other wait */
	raw_close(&j);
}

/*
 * Someone else holds the rendezvous port and plays rank 0: it asks for the
 * secret, then welcomes rank 1 without knowing it. Rank 1 must refuse, and
 * must not have sent its contribution.
 */
struct impostor {
	int lfd;
	uint8_t version;     /* of its challenge: BV, or another release's */
	uint8_t welcome_len; /* the welcome's payload: 64 is right, 0 is short */
	ssize_t after_hello; /* bytes rank 1 sent after its hello */
};

static void *impostor_main(void *arg)
{
	struct impostor *im = arg;
	uint8_t ch[8 + 33] = { 0x52, 0x42, BV, 1, 0, 0, 0, 33 };
	uint8_t welcome[8 + 64] = { 0x52, 0x42, BV, 3, 0, 0, 0, im->welcome_len };
	size_t welcome_size = 8 + (size_t)im->welcome_len;
	uint8_t in[512];
	int fd = accept(im->lfd, NULL, NULL);

	im->after_hello = -1;
	if (fd < 0)
		return NULL;
	ch[2] = im->version;
	struct timeval tv = { .tv_sec = 5 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	ch[8 + 32] = 1; /* the secret is required */
	size_t got = 0;
	if (write(fd, ch, sizeof(ch)) == (ssize_t)sizeof(ch)) {
		while (got < 8 + 72) { /* the hello */
			ssize_t r = read(fd, in + got, 8 + 72 - got);
			if (r <= 0)
				break;
			got += (size_t)r;
		}
	}
	if (got == 8 + 72 && write(fd, welcome, welcome_size) == (ssize_t)welcome_size) {
		ssize_t r;
		im->after_hello = 0;
		while ((r = read(fd, in, sizeof(in))) > 0) /* until rank 1 closes */
			im->after_hello += r;
	}
	close(fd);
	return NULL;
}

/* The welcome is a whole one (a proof the impostor cannot make), or one
 * shorter than a proof, which rank 1 must refuse without reading past it. */
static void impostor_welcome(uint8_t version, uint8_t welcome_len, int want_rc,
			     const char *want_err)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	struct impostor im = { .lfd = socket(AF_INET, SOCK_STREAM, 0),
			       .version = version,
			       .welcome_len = welcome_len };
	struct rank_run r1 = { .timeout_ms = 3000, .rounds = 1 };
	pthread_t t;

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	CHECK(im.lfd >= 0 && !bind(im.lfd, (struct sockaddr *)&sa, sizeof(sa)) &&
	      !listen(im.lfd, 4) && !getsockname(im.lfd, (struct sockaddr *)&sa, &sl));
	CHECK_OK(open_rank(1, 2, ntohs(sa.sin_port), "the job's own secret, 42", &r1.bs));
	pthread_create(&t, NULL, impostor_main, &im);
	run_rank(&r1);
	rcc_bootstrap_close(r1.bs); /* lets the impostor's read end */
	pthread_join(t, NULL);
	close(im.lfd);
	CHECK_EQ(r1.rc, want_rc);
	CHECK_MSG(strstr(r1.err, want_err), "rank 1 says: %s", r1.err);
	/* our address never went to it; nor the hello, to another release */
	CHECK_EQ(im.after_hello, version == BV ? 0 : -1);
}

static void impostor_rank0(void)
{
	impostor_welcome(BV, 64, -EACCES, "does not know the job secret");
	impostor_welcome(BV, 0, -EPROTO, "malformed");
}

/*
 * Ranks of two rcc releases in one job (the rendezvous protocol changed):
 * each side names the mismatch instead of "a malformed frame". Rank 1 under
 * a rank 0 of another release; then rank 0 with a rank 1 of another release,
 * which it turns away and names when the rank never arrives.
 */
static void other_release(void)
{
	impostor_welcome(BV - 1, 64, -EPROTONOSUPPORT, "another version of the bootstrap protocol");

	struct rank_run r0 = { .timeout_ms = 1000, .rounds = 1 };
	uint8_t ch[8 + 33],
		hello[8 + 72] = { 0x52, 0x42, BV + 1, 2, 0, 0, 0, 72, 0, 0, 0, 1, 0, 0, 0, 2 };
	CHECK_OK(open_rank(0, 2, 0, NULL, &r0.bs));
	int fd = raw_connect(rcc_bootstrap_rendezvous_port(r0.bs));
	CHECK(fd >= 0);
	pthread_t t0;
	pthread_create(&t0, NULL, run_rank, &r0);
	CHECK(read_n(fd, ch, sizeof(ch)));
	CHECK(write(fd, hello, sizeof(hello)) == (ssize_t)sizeof(hello));
	CHECK_EQ(closed_by_peer(fd), 0);
	pthread_join(t0, NULL);
	CHECK_EQ(r0.rc, -ETIMEDOUT);
	CHECK_MSG(strstr(r0.err, "never arrived: rank 1") &&
			  strstr(r0.err, "another version of the bootstrap protocol"),
		  "rank 0 says: %s", r0.err);
	close(fd);
	rcc_bootstrap_close(r0.bs);
}

/*
 * rcc_bootstrap_derive_key(): with a secret, every rank of a run derives the
 * same key for a label once its first collective is over (-EAGAIN before),
 * another label gives another key, and another run of the same job (same
 * secret) other keys: rank 0's run id. Without a secret, -ENOKEY.
 */
static void derived_keys(void)
{
	static const char secret[] = "0123456789abcdef-job-7";
	static const char *const s[] = { secret, secret, secret };
	static struct rank_run runs[3], again[3];
	uint8_t k[3][RCC_BOOTSTRAP_KEY_LEN], other[RCC_BOOTSTRAP_KEY_LEN],
		next[RCC_BOOTSTRAP_KEY_LEN];
	struct rcc_bootstrap *bs;

	CHECK_OK(open_rank(0, 2, 0, secret, &bs));
	memset(other, 0xee, sizeof(other));
	CHECK_EQ(rcc_bootstrap_derive_key(bs, "a label", other), -EAGAIN);
	CHECK_EQ(other[0], 0xee); /* untouched on failure */
	CHECK_EQ(rcc_bootstrap_derive_key(bs, "", other), -EINVAL);
	CHECK_EQ(rcc_bootstrap_derive_key(bs, NULL, other), -EINVAL);
	CHECK_EQ(rcc_bootstrap_derive_key(NULL, "a label", other), -EINVAL);
	rcc_bootstrap_close(bs);

	CHECK_OK(job(3, s, 1, 10000, runs));
	for (int r = 0; r < 3; r++) {
		CHECK_MSG(runs[r].rc == 0, "rank %d: %s", r, runs[r].err);
		CHECK_OK(rcc_bootstrap_derive_key(runs[r].bs, "rcc-mesh hello", k[r]));
	}
	CHECK(!memcmp(k[0], k[1], sizeof(k[0])) && !memcmp(k[0], k[2], sizeof(k[0])));
	CHECK_OK(rcc_bootstrap_derive_key(runs[1].bs, "another label", other));
	CHECK(memcmp(other, k[1], sizeof(other)));
	CHECK_OK(job(3, s, 1, 10000, again));
	for (int r = 0; r < 3; r++) {
		CHECK_MSG(again[r].rc == 0, "rank %d: %s", r, again[r].err);
		CHECK_OK(rcc_bootstrap_derive_key(again[r].bs, "rcc-mesh hello", next));
		CHECK(memcmp(next, k[0], sizeof(next))); /* another run */
	}
	close_all(again, 3);
	close_all(runs, 3);

	CHECK_OK(job(2, NULL, 1, 10000, runs));
	for (int r = 0; r < 2; r++) {
		CHECK_MSG(runs[r].rc == 0, "rank %d: %s", r, runs[r].err);
		CHECK_EQ(rcc_bootstrap_derive_key(runs[r].bs, "rcc-mesh hello", other), -ENOKEY);
	}
	close_all(runs, 2);
}

static void rank_leaves(void)
{
	static struct rank_run runs[3];
	pthread_t th[2];

	CHECK_OK(job(3, NULL, 1, 10000, runs));
	for (int k = 0; k < 3; k++)
		CHECK_MSG(runs[k].rc == 0, "rank %d: %s", k, runs[k].err);
	rcc_bootstrap_close(runs[2].bs);
	runs[2].bs = NULL;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int k = 0; k < 2; k++) {
		runs[k].timeout_ms = 20000;
		pthread_create(&th[k], NULL, run_rank, &runs[k]);
	}
	for (int k = 0; k < 2; k++)
		pthread_join(th[k], NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	CHECK_EQ(runs[0].rc, -ECONNRESET);
	CHECK_MSG(strstr(runs[0].err, "rank 2 (127.0.0.1:") &&
			  strstr(runs[0].err, "closed the connection"),
		  "rank 0 says: %s", runs[0].err);
	CHECK_EQ(runs[1].rc, -ECANCELED);
	CHECK_MSG(strstr(runs[1].err, "rank 0 gave up: rank 2 (127.0.0.1:"), "rank 1 says: %s",
		  runs[1].err);
	CHECK(b.tv_sec - a.tv_sec < 10); /* far from the 20 s bound: noticed, not timed out */
	close_all(runs, 3);
}

/*
 * Rank 2 of 3 joins, contributes and dies (its connection closes) before rank
 * 1 has come: the round cannot complete. Rank 0 does not hand out a result
 * without it; once rank 1 is in, both fail at once naming rank 2, so that a
 * rank that came late hears why too.
 */
static void leaves_after_contributing(void)
{
	static struct raw_job j;

	/* 10 s: a rank 0 that never tells rank 1 fails the case in that time */
	int st = raw_start(&j, 10000);
	CHECK(st >= 0);
	bool ok = st == 1 && raw_contribute_and_die(&j);
	long secs = raw_finish(&j, false);
	CHECK(ok);
	/* the all-gather itself failed: no result with a dead rank's blob in it */
	CHECK(j.r0.lens[0] == SIZE_MAX && j.r1.lens[0] == SIZE_MAX);
	CHECK_EQ(j.r0.rc, -ECONNRESET);
	CHECK_MSG(strstr(j.r0.err, "rank 2 (127.0.0.1:") &&
			  strstr(j.r0.err, "closed the connection"),
		  "rank 0 says: %s", j.r0.err);
	CHECK_EQ(j.r1.rc, -ECANCELED);
	CHECK_MSG(strstr(j.r1.err, "rank 0 gave up: rank 2 (127.0.0.1:"), "rank 1 says: %s",
		  j.r1.err);
	CHECK(secs < 5); /* not the 10 s timeout (it takes milliseconds) */
	raw_close(&j);
}

/* The same, and rank 1 never comes: at the timeout rank 0 names both, the
 * rank that never arrived and the rank it lost. */
static void lost_and_absent(void)
{
	static struct raw_job j;

	int st = raw_start(&j, 800);
	CHECK(st >= 0);
	bool ok = st == 1 && raw_contribute_and_die(&j);
	long secs = raw_finish(&j, true);
	CHECK(ok);
	CHECK_EQ(j.r0.rc, -ETIMEDOUT);
	CHECK_MSG(strstr(j.r0.err, "never arrived: rank 1; lost: rank 2 (127.0.0.1:") &&
			  strstr(j.r0.err, "closed the connection"),
		  "rank 0 says: %s", j.r0.err);
	CHECK(secs < 5);
	raw_close(&j);
}

static void environment(void)
{
	struct rcc_bootstrap *bs;
	char err[RCC_BOOTSTRAP_ERROR_MAX];

	clear_env();
	CHECK_EQ(rcc_bootstrap_open(NULL, &bs, err, sizeof(err)), -ENOENT);
	CHECK(strstr(err, "no rank in the environment"));
	CHECK(!strcmp(rcc_last_error(), err));
	CHECK_EQ(rcc_bootstrap_open(NULL, &bs, NULL, 0), -ENOENT); /* no buffer: still said */
	CHECK(strstr(rcc_last_error(), "no rank in the environment"));
	/* torchrun's names; a job of one needs no rendezvous */
	setenv("RANK", "0", 1);
	setenv("WORLD_SIZE", "1", 1);
	CHECK_OK(rcc_bootstrap_open(NULL, &bs, err, sizeof(err)));
	size_t len;
	char out[8];
	CHECK_OK(rcc_bootstrap_allgather(bs, "me", 2, out, sizeof(out), &len, 0));
	CHECK(len == 2 && !memcmp(out, "me", 2));
	CHECK_OK(rcc_bootstrap_barrier(bs, 0));
	rcc_bootstrap_close(bs);
	/* mpirun's names, but no rendezvous for 4 ranks */
	clear_env();
	setenv("OMPI_COMM_WORLD_RANK", "2", 1);
	setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
	CHECK_EQ(rcc_bootstrap_open(NULL, &bs, err, sizeof(err)), -EDESTADDRREQ);
	CHECK(strstr(err, "MASTER_ADDR"));
	/* RCC_RANK wins over RANK, with its own size */
	setenv("RANK", "9", 1);
	setenv("RCC_RANK", "1", 1);
	CHECK_EQ(rcc_bootstrap_open(NULL, &bs, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "RCC_RANK is set but RCC_WORLD_SIZE is not"));
	setenv("RCC_WORLD_SIZE", "1", 1);
	CHECK_EQ(rcc_bootstrap_open(NULL, &bs, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "RCC_RANK=1 is not below RCC_WORLD_SIZE=1"));
	setenv("RCC_RANK", "1x", 1);
	CHECK_EQ(rcc_bootstrap_open(NULL, &bs, err, sizeof(err)), -EINVAL);
	/* a short secret */
	clear_env();
	setenv("RANK", "1", 1);
	setenv("WORLD_SIZE", "2", 1);
	setenv("MASTER_ADDR", "127.0.0.1", 1);
	setenv("MASTER_PORT", "1", 1);
	setenv("RCC_JOB_SECRET", "short", 1);
	CHECK_EQ(rcc_bootstrap_open(NULL, &bs, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "secret"));
	unsetenv("RCC_JOB_SECRET");
	setenv("MASTER_PORT", "0", 1); /* only rank 0 may take a free port */
	CHECK_EQ(rcc_bootstrap_open(NULL, &bs, err, sizeof(err)), -EINVAL);
	setenv("RCC_BOOTSTRAP", "carrier-pigeon", 1);
	CHECK_EQ(rcc_bootstrap_open(NULL, &bs, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "RCC_BOOTSTRAP"));
	clear_env();
}

static void static_list(void)
{
	const char *nodes[] = { "10.0.0.1:7101", "10.0.0.2:7101", "[fe80::1]:7101" };
	struct rcc_bootstrap_attr a = { .nodes = nodes, .nnodes = 3, .rank = 2 };
	struct rcc_bootstrap *bs;
	char out[3 * 32], err[RCC_BOOTSTRAP_ERROR_MAX];
	size_t lens[3];

	clear_env();
	CHECK_OK(rcc_bootstrap_open(&a, &bs, err, sizeof(err)));
	CHECK(!strcmp(rcc_bootstrap_backend_name(bs), "static"));
	CHECK_EQ(rcc_bootstrap_rank(bs), 2);
	CHECK_EQ(rcc_bootstrap_size(bs), 3);
	CHECK_OK(rcc_bootstrap_allgather(bs, "ignored", 7, out, 32, lens, 0));
	CHECK(lens[2] == strlen(nodes[2]) && !memcmp(out + 64, nodes[2], lens[2]));
	CHECK_EQ(rcc_bootstrap_barrier(bs, 0), -ENOTSUP);
	uint8_t key[RCC_BOOTSTRAP_KEY_LEN];
	CHECK_EQ(rcc_bootstrap_derive_key(bs, "a label", key), -ENOKEY);
	CHECK_EQ(rcc_bootstrap_allgather(bs, "x", 1, out, 4, lens, 0), -EMSGSIZE);
	rcc_bootstrap_close(bs);
	a.rank = 3;
	CHECK_EQ(rcc_bootstrap_open(&a, &bs, err, sizeof(err)), -EINVAL);
}

/*
 * PMIx is optional at build time. Without it, the PMIx backend asked for by
 * name (attr or RCC_BOOTSTRAP=pmix) is -ENOTSUP with a sentence saying so,
 * and AUTO under a PMIx launcher's variables takes the env backend; the env
 * and static backends are the other cases. With it, AUTO takes PMIx only
 * under a PMIx server (PMIX_RANK and PMIX_NAMESPACE set).
 */
static void pmix_optional(void)
{
	struct rcc_bootstrap *bs;
	char err[RCC_BOOTSTRAP_ERROR_MAX];

	clear_env();
	setenv("RANK", "0", 1);
	setenv("WORLD_SIZE", "1", 1);
#ifndef RCC_HAVE_PMIX
	struct rcc_bootstrap_attr a = { .backend = RCC_BOOTSTRAP_PMIX };
	CHECK_EQ(rcc_bootstrap_open(&a, &bs, err, sizeof(err)), -ENOTSUP);
	CHECK_MSG(strstr(err, "built without PMIx"), "says: %s", err);
	setenv("RCC_BOOTSTRAP", "pmix", 1);
	CHECK_EQ(rcc_bootstrap_open(NULL, &bs, err, sizeof(err)), -ENOTSUP);
	CHECK(strstr(rcc_last_error(), "built without PMIx"));
	unsetenv("RCC_BOOTSTRAP");
	setenv("PMIX_NAMESPACE", "a-job", 1);
	setenv("PMIX_RANK", "0", 1);
#endif
	CHECK_OK(rcc_bootstrap_open(NULL, &bs, err, sizeof(err)));
	CHECK_MSG(!strcmp(rcc_bootstrap_backend_name(bs), "env"), "took %s",
		  rcc_bootstrap_backend_name(bs));
	rcc_bootstrap_close(bs);
	clear_env();
}

TEST_MAIN(TEST(eight_ranks), TEST(with_secret), TEST(wrong_secret), TEST(secret_on_one_side),
	  TEST(never_arrives), TEST(joined_silent), TEST(intruders), TEST(impostor_rank0),
	  TEST(other_release), TEST(derived_keys), TEST(rank_leaves),
	  TEST(leaves_after_contributing), TEST(lost_and_absent), TEST(environment),
	  TEST(static_list), TEST(pmix_optional))
