/* SPDX-License-Identifier: BSD-3-Clause */
/* The bootstrap's front: backend choice, argument checks, error text. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "boot.h"
#include "base/last_error.h"
#include "base/log.h"

void rcci_boot_fail(struct rcc_bootstrap *bs, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(bs->err, sizeof(bs->err), fmt, ap);
	va_end(ap);
	/* info, not error: the caller gets the sentence (rcc_bootstrap_error) and
	 * says it in its own words; an error line too would say it twice */
	log_info("bootstrap: rank %d: %s", bs->rank, bs->err);
}

void rcci_boot_explain(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static int choose(const struct rcc_bootstrap_attr *attr, enum rcc_bootstrap_backend *b, char *err,
		  size_t errlen)
{
	const char *forced = getenv("RCC_BOOTSTRAP");

	*b = attr ? attr->backend : RCC_BOOTSTRAP_AUTO;
	if (*b != RCC_BOOTSTRAP_AUTO)
		return 0;
	if (forced && *forced) {
		if (!strcmp(forced, "pmix"))
			*b = RCC_BOOTSTRAP_PMIX;
		else if (!strcmp(forced, "env"))
			*b = RCC_BOOTSTRAP_ENV;
		else if (!strcmp(forced, "static"))
			*b = RCC_BOOTSTRAP_STATIC;
		else {
			rcci_boot_explain(err, errlen, "RCC_BOOTSTRAP must be pmix, env or static");
			return -EINVAL;
		}
		return 0;
	}
	if (attr && attr->nodes)
		*b = RCC_BOOTSTRAP_STATIC;
	else if (rcci_boot_pmix_present())
		*b = RCC_BOOTSTRAP_PMIX;
	else
		*b = RCC_BOOTSTRAP_ENV;
	return 0;
}

int rcc_bootstrap_open(const struct rcc_bootstrap_attr *attr, struct rcc_bootstrap **out, char *err,
		       size_t errlen)
{
	enum rcc_bootstrap_backend b;
	struct rcc_bootstrap *bs;
	int rc;

	char why[RCC_BOOTSTRAP_ERROR_MAX] = "";

	rcci_error_clear(); /* a set-up call: rcc_last_error() tells this one's failure */
	if (!out)
		return rcci_fail(-EINVAL, "rcc_bootstrap_open: no place for the handle");
	if (!err || !errlen) /* the sentence goes to rcc_last_error() all the same */
		err = why, errlen = sizeof(why);
	*err = 0;
	rc = choose(attr, &b, err, errlen);
	if (rc)
		return rcci_fail(rc, "%s", err);
	bs = calloc(1, sizeof(*bs));
	if (!bs) {
		rcci_boot_explain(err, errlen, "out of memory");
		return rcci_fail(-ENOMEM, "%s", err);
	}
	switch (b) {
	case RCC_BOOTSTRAP_STATIC:
		rc = rcci_boot_static_open(bs, attr, err, errlen);
		break;
	case RCC_BOOTSTRAP_PMIX:
		rc = rcci_boot_pmix_open(bs, err, errlen);
		break;
	case RCC_BOOTSTRAP_ENV:
		rc = rcci_boot_env_open(bs, err, errlen);
		break;
	default:
		rcci_boot_explain(err, errlen, "unknown bootstrap backend %d", (int)b);
		rc = -EINVAL;
	}
	if (rc) {
		free(bs);
		return rcci_fail(rc, "%s", err);
	}
	log_info("bootstrap: %s backend, rank %d of %d", bs->ops->name, bs->rank, bs->size);
	*out = bs;
	return 0;
}

int rcc_bootstrap_rank(const struct rcc_bootstrap *bs) { return bs ? bs->rank : -EINVAL; }

int rcc_bootstrap_size(const struct rcc_bootstrap *bs) { return bs ? bs->size : -EINVAL; }

const char *rcc_bootstrap_backend_name(const struct rcc_bootstrap *bs)
{
	return bs ? bs->ops->name : "";
}

int rcc_bootstrap_rendezvous_port(const struct rcc_bootstrap *bs)
{
	if (!bs)
		return -EINVAL;
	return bs->ops->rendezvous_port ? bs->ops->rendezvous_port(bs) : -ENOTSUP;
}

int rcc_bootstrap_local_host(const struct rcc_bootstrap *bs, char *buf, size_t len)
{
	if (!bs || !buf || !len)
		return -EINVAL;
	return bs->ops->local_host ? bs->ops->local_host(bs, buf, len) : -ENOTSUP;
}

int rcc_bootstrap_derive_key(const struct rcc_bootstrap *bs, const char *label,
			     uint8_t out[RCC_BOOTSTRAP_KEY_LEN])
{
	uint8_t key[RCC_BOOTSTRAP_KEY_LEN];
	int rc;

	if (!bs || !label || !*label || !out)
		return -EINVAL;
	rc = bs->ops->derive_key ? bs->ops->derive_key(bs, label, key) : -ENOKEY;
	if (!rc)
		memcpy(out, key, sizeof(key));
	memset(key, 0, sizeof(key));
	return rc;
}

static int usable(struct rcc_bootstrap *bs)
{
	if (bs->broken) /* the error text of the failure stays */
		return rcci_fail(-ECANCELED, "%s", bs->err);
	bs->err[0] = 0;
	return 0;
}

int rcc_bootstrap_allgather(struct rcc_bootstrap *bs, const void *blob, size_t len, void *out,
			    size_t stride, size_t *lens, int timeout_ms)
{
	int rc;

	rcci_error_clear(); /* a set-up call: rcc_last_error() tells this one's failure */
	if (!bs || (len && !blob) || !lens || (stride && !out) || timeout_ms < 0)
		return rcci_fail(-EINVAL, "rcc_bootstrap_allgather: a NULL or negative argument");
	if ((rc = usable(bs)))
		return rc;
	if (len > RCC_BOOTSTRAP_BLOB_MAX) {
		rcci_boot_fail(bs, "a blob of %zu bytes is more than the %d the bootstrap carries",
			       len, RCC_BOOTSTRAP_BLOB_MAX);
		return rcci_fail(-EMSGSIZE, "%s", bs->err);
	}
	rc = bs->ops->allgather(bs, blob, len, out, stride, lens,
				timeout_ms ? timeout_ms : RCC_BOOTSTRAP_DEFAULT_TIMEOUT_MS);
	if (rc) { /* even a stride too small: that round is over for the others */
		bs->broken = true;
		rcci_fail(rc, "%s", bs->err);
	}
	return rc;
}

int rcc_bootstrap_barrier(struct rcc_bootstrap *bs, int timeout_ms)
{
	int rc;

	rcci_error_clear();
	if (!bs || timeout_ms < 0)
		return rcci_fail(-EINVAL, "rcc_bootstrap_barrier: a NULL or negative argument");
	if ((rc = usable(bs)))
		return rc;
	if (!bs->ops->barrier) {
		rcci_boot_fail(bs, "the %s bootstrap has no barrier", bs->ops->name);
		return rcci_fail(-ENOTSUP, "%s", bs->err);
	}
	rc = bs->ops->barrier(bs, timeout_ms ? timeout_ms : RCC_BOOTSTRAP_DEFAULT_TIMEOUT_MS);
	if (rc) {
		bs->broken = true;
		rcci_fail(rc, "%s", bs->err);
	}
	return rc;
}

const char *rcc_bootstrap_error(const struct rcc_bootstrap *bs) { return bs ? bs->err : ""; }

int rcc_bootstrap_close(struct rcc_bootstrap *bs)
{
	if (!bs)
		return 0;
	bs->ops->close(bs);
	free(bs);
	return 0;
}
