/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The PMIx bootstrap: the launcher (mpirun, srun --mpi=pmix, prterun) already
 * runs a PMIx server beside every process; rank, size and the key-value
 * exchange come from it. Built only with PMIx (pkg-config pmix); without it
 * this backend answers -ENOTSUP and says how to get it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "boot.h"
#include "base/log.h"
#include "base/sock.h"

#ifdef RCC_HAVE_PMIX
#include <pmix.h>

struct boot_pmix {
	pmix_proc_t me;
	uint32_t round;
};

/* A wildcard fence, bounded in seconds (PMIx has no finer unit; at least 1). */
static pmix_status_t fence(struct boot_pmix *p, bool collect, int timeout_ms)
{
	pmix_proc_t all;
	pmix_info_t info[2];
	bool yes = true;
	int secs = (timeout_ms + 999) / 1000;
	size_t n = 0;
	pmix_status_t st;

	PMIX_LOAD_PROCID(&all, p->me.nspace, PMIX_RANK_WILDCARD);
	PMIX_INFO_CONSTRUCT(&info[0]);
	PMIX_INFO_CONSTRUCT(&info[1]);
	PMIX_INFO_LOAD(&info[n], PMIX_TIMEOUT, &secs, PMIX_INT);
	n++;
	if (collect) {
		PMIX_INFO_LOAD(&info[n], PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
		n++;
	}
	st = PMIx_Fence(&all, 1, info, n);
	PMIX_INFO_DESTRUCT(&info[0]);
	PMIX_INFO_DESTRUCT(&info[1]);
	return st;
}

/*
 * After a failed fence: the ranks whose value for key PMIx cannot give us,
 * each asked with a bound of a second (a rank that published answers at
 * once), into buf ("2, 5"); at most 16 named, and no new question after 4 s.
 * Those did not reach the exchange: their process ended or never started.
 */
static void missing_ranks(const struct rcc_bootstrap *bs, const struct boot_pmix *p,
			  const char *key, char *buf, size_t len)
{
	uint64_t until = rcci_deadline(4000);
	pmix_info_t info;
	int secs = 1, shown = 0;
	size_t off = 0;

	buf[0] = 0;
	PMIX_INFO_CONSTRUCT(&info);
	PMIX_INFO_LOAD(&info, PMIX_TIMEOUT, &secs, PMIX_INT);
	for (int i = 0; i < bs->size && off < len; i++) {
		pmix_proc_t peer;
		pmix_value_t *got = NULL;

		if (i == bs->rank)
			continue;
		if (shown == 16 || !rcci_ms_left(until)) {
			if (shown) /* perhaps more */
				snprintf(buf + off, len - off, ", ...");
			break;
		}
		PMIX_LOAD_PROCID(&peer, p->me.nspace, (pmix_rank_t)i);
		if (PMIx_Get(&peer, key, &info, 1, &got) == PMIX_SUCCESS) {
			PMIX_VALUE_RELEASE(got);
			continue;
		}
		off += (size_t)snprintf(buf + off, len - off, "%s%d", shown++ ? ", " : "", i);
	}
	PMIX_INFO_DESTRUCT(&info);
}

static int pmix_allgather(struct rcc_bootstrap *bs, const void *blob, size_t len, void *out,
			  size_t stride, size_t *lens, int timeout_ms)
{
	struct boot_pmix *p = bs->priv;
	size_t n = (size_t)bs->size;
	uint8_t *all = NULL, one[1 + RCC_BOOTSTRAP_BLOB_MAX];
	size_t *l = NULL;
	char key[32];
	pmix_value_t v, *got;
	pmix_status_t st;
	int rc = 0;

	/* a leading byte, so an empty blob is still a value */
	one[0] = 1;
	if (len)
		memcpy(one + 1, blob, len);
	snprintf(key, sizeof(key), "rcc.boot.%u", p->round);
	PMIX_VALUE_CONSTRUCT(&v);
	v.type = PMIX_BYTE_OBJECT;
	v.data.bo.bytes = (char *)one;
	v.data.bo.size = len + 1;
	st = PMIx_Put(PMIX_GLOBAL, key, &v);
	if (st == PMIX_SUCCESS)
		st = PMIx_Commit();
	if (st == PMIX_SUCCESS)
		st = fence(p, true, timeout_ms);
	if (st != PMIX_SUCCESS) {
		char missing[200];
		missing_ranks(bs, p, key, missing, sizeof(missing));
		rcci_boot_fail(bs, "PMIx exchange failed: %s%s%s%s", PMIx_Error_string(st),
			       *missing ? "; never reached it: rank " : "", missing,
			       *missing ? " (its process ended, or never started)" : "");
		return st == PMIX_ERR_TIMEOUT ? -ETIMEDOUT : -EIO;
	}
	all = malloc(n * RCC_BOOTSTRAP_BLOB_MAX);
	l = malloc(n * sizeof(*l));
	if (!all || !l) {
		rcci_boot_fail(bs, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		pmix_proc_t peer;
		PMIX_LOAD_PROCID(&peer, p->me.nspace, (pmix_rank_t)i);
		st = PMIx_Get(&peer, key, NULL, 0, &got);
		if (st != PMIX_SUCCESS) {
			rcci_boot_fail(bs, "PMIx has no address of rank %zu: %s", i,
				       PMIx_Error_string(st));
			rc = -EIO;
			goto out;
		}
		bool ok = got->type == PMIX_BYTE_OBJECT && got->data.bo.size >= 1 &&
			  got->data.bo.size <= 1 + RCC_BOOTSTRAP_BLOB_MAX;
		if (ok) {
			l[i] = got->data.bo.size - 1;
			memcpy(all + i * RCC_BOOTSTRAP_BLOB_MAX, got->data.bo.bytes + 1, l[i]);
		}
		PMIX_VALUE_RELEASE(got);
		if (!ok) {
			rcci_boot_fail(bs, "rank %zu's bootstrap value is malformed", i);
			rc = -EPROTO;
			goto out;
		}
		if (l[i] > stride) {
			rcci_boot_fail(bs,
				       "rank %zu's blob is %zu bytes, more than the %zu asked for",
				       i, l[i], stride);
			rc = -EMSGSIZE;
			goto out;
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (l[i]) /* out may be NULL when every blob is empty */
			memcpy((uint8_t *)out + i * stride, all + i * RCC_BOOTSTRAP_BLOB_MAX, l[i]);
		lens[i] = l[i];
	}
	p->round++;
out:
	free(l);
	free(all);
	return rc;
}

static int pmix_barrier(struct rcc_bootstrap *bs, int timeout_ms)
{
	pmix_status_t st = fence(bs->priv, false, timeout_ms);

	if (st == PMIX_SUCCESS)
		return 0;
	rcci_boot_fail(bs, "PMIx barrier failed: %s", PMIx_Error_string(st));
	return st == PMIX_ERR_TIMEOUT ? -ETIMEDOUT : -EIO;
}

static void pmix_close(struct rcc_bootstrap *bs)
{
	PMIx_Finalize(NULL, 0);
	free(bs->priv);
}

static const struct boot_ops pmix_ops = {
	.name = "pmix",
	.allgather = pmix_allgather,
	.barrier = pmix_barrier,
	.close = pmix_close,
};

bool rcci_boot_pmix_present(void)
{
	const char *ns = getenv("PMIX_NAMESPACE"), *rank = getenv("PMIX_RANK");
	return ns && *ns && rank && *rank;
}

int rcci_boot_pmix_open(struct rcc_bootstrap *bs, char *err, size_t errlen)
{
	struct boot_pmix *p = calloc(1, sizeof(*p));
	pmix_proc_t all;
	pmix_value_t *val;
	pmix_status_t st;
	uint32_t size;

	if (!p) {
		rcci_boot_explain(err, errlen, "out of memory");
		return -ENOMEM;
	}
	st = PMIx_Init(&p->me, NULL, 0);
	if (st != PMIX_SUCCESS) {
		rcci_boot_explain(err, errlen, "PMIx_Init failed (%s): not under a PMIx launcher?",
				  PMIx_Error_string(st));
		free(p);
		return -ENOENT;
	}
	PMIX_LOAD_PROCID(&all, p->me.nspace, PMIX_RANK_WILDCARD);
	st = PMIx_Get(&all, PMIX_JOB_SIZE, NULL, 0, &val);
	if (st != PMIX_SUCCESS || val->type != PMIX_UINT32) {
		if (st == PMIX_SUCCESS)
			PMIX_VALUE_RELEASE(val);
		rcci_boot_explain(err, errlen, "PMIx does not tell the job size");
		goto err_fini;
	}
	size = val->data.uint32;
	PMIX_VALUE_RELEASE(val);
	if (!size || size > RCC_BOOTSTRAP_MAX_RANKS || p->me.rank >= size) {
		rcci_boot_explain(err, errlen,
				  "PMIx says rank %u of %u ranks, which rcc cannot take",
				  p->me.rank, size);
		goto err_fini;
	}
	bs->ops = &pmix_ops;
	bs->rank = (int)p->me.rank;
	bs->size = (int)size;
	bs->priv = p;
	return 0;

err_fini:
	PMIx_Finalize(NULL, 0);
	free(p);
	return -EINVAL;
}

#else /* !RCC_HAVE_PMIX */

bool rcci_boot_pmix_present(void) { return false; }

int rcci_boot_pmix_open(struct rcc_bootstrap *bs, char *err, size_t errlen)
{
	(void)bs;
	rcci_boot_explain(
		err, errlen,
		"this rcc was built without PMIx (install libpmix-dev and rebuild); use the "
		"env bootstrap (MASTER_ADDR/MASTER_PORT)");
	return -ENOTSUP;
}

#endif
