/* SPDX-License-Identifier: BSD-3-Clause */
/* The bootstrap's backends behind include/rcc/bootstrap.h. */
#ifndef RCC_SESSION_BOOT_H
#define RCC_SESSION_BOOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rcc/bootstrap.h"

struct rcc_bootstrap;

struct boot_ops {
	const char *name;
	/* lens/out as rcc_bootstrap_allgather; timeout_ms already defaulted */
	int (*allgather)(struct rcc_bootstrap *bs, const void *blob, size_t len, void *out,
			 size_t stride, size_t *lens, int timeout_ms);
	int (*barrier)(struct rcc_bootstrap *bs, int timeout_ms); /* NULL: -ENOTSUP */
	int (*rendezvous_port)(const struct rcc_bootstrap *bs);   /* NULL: -ENOTSUP */
	int (*local_host)(const struct rcc_bootstrap *bs, char *buf, size_t len);
	/* NULL: -ENOKEY; label checked non-empty by the front */
	int (*derive_key)(const struct rcc_bootstrap *bs, const char *label,
			  uint8_t out[RCC_BOOTSTRAP_KEY_LEN]);
	void (*close)(struct rcc_bootstrap *bs);
};

struct rcc_bootstrap {
	const struct boot_ops *ops;
	int rank, size;
	bool broken; /* a collective failed: the job cannot go on */
	char err[RCC_BOOTSTRAP_ERROR_MAX];
	void *priv;
};

/* Record why the current call failed (also logged, at info level). */
void rcci_boot_fail(struct rcc_bootstrap *bs, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Append to err (errlen bytes) if there is one: open's explanation. */
void rcci_boot_explain(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Each sets bs->ops, rank, size, priv; on failure explains into err. */
int rcci_boot_static_open(struct rcc_bootstrap *bs, const struct rcc_bootstrap_attr *attr,
			  char *err, size_t errlen);
int rcci_boot_env_open(struct rcc_bootstrap *bs, char *err, size_t errlen);
int rcci_boot_pmix_open(struct rcc_bootstrap *bs, char *err, size_t errlen);
/* Whether PMIx is built in and this process runs under a PMIx server. */
bool rcci_boot_pmix_present(void);

#endif
