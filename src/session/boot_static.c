/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The static bootstrap: a node list the caller already has (rcc-mesh's
 * --nodes/--hostfile). No channel: the all-gather answers with the list
 * entries, which are what the ranks would have published.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "boot.h"

struct boot_static {
	char **nodes;
};

static int static_allgather(struct rcc_bootstrap *bs, const void *blob, size_t len, void *out,
			    size_t stride, size_t *lens, int timeout_ms)
{
	struct boot_static *st = bs->priv;

	(void)blob, (void)len, (void)timeout_ms;
	for (int i = 0; i < bs->size; i++)
		if (strlen(st->nodes[i]) > stride) {
			rcci_boot_fail(bs, "node %d's entry is longer than %zu bytes", i, stride);
			return -EMSGSIZE;
		}
	for (int i = 0; i < bs->size; i++) {
		lens[i] = strlen(st->nodes[i]);
		if (lens[i])
			memcpy((char *)out + (size_t)i * stride, st->nodes[i], lens[i]);
	}
	return 0;
}

static void static_close(struct rcc_bootstrap *bs)
{
	struct boot_static *st = bs->priv;

	for (int i = 0; i < bs->size; i++)
		free(st->nodes[i]);
	free(st->nodes);
	free(st);
}

static const struct boot_ops static_ops = {
	.name = "static",
	.allgather = static_allgather,
	.close = static_close,
};

int rcci_boot_static_open(struct rcc_bootstrap *bs, const struct rcc_bootstrap_attr *attr,
			  char *err, size_t errlen)
{
	struct boot_static *st;
	int i;

	if (!attr || !attr->nodes || attr->nnodes < 1 || attr->nnodes > RCC_BOOTSTRAP_MAX_RANKS) {
		rcci_boot_explain(err, errlen, "the static bootstrap needs a list of 1 to %d nodes",
				  RCC_BOOTSTRAP_MAX_RANKS);
		return -EINVAL;
	}
	if (attr->rank < 0 || attr->rank >= attr->nnodes) {
		rcci_boot_explain(err, errlen, "rank %d is not in a list of %d nodes", attr->rank,
				  attr->nnodes);
		return -EINVAL;
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		goto err_mem;
	st->nodes = calloc((size_t)attr->nnodes, sizeof(*st->nodes));
	if (!st->nodes)
		goto err_st;
	for (i = 0; i < attr->nnodes; i++) {
		if (!attr->nodes[i] || strlen(attr->nodes[i]) > RCC_BOOTSTRAP_BLOB_MAX) {
			rcci_boot_explain(err, errlen, "node %d of the list is missing or too long",
					  i);
			goto err_nodes_inval;
		}
		if (!(st->nodes[i] = strdup(attr->nodes[i])))
			goto err_nodes;
	}
	bs->ops = &static_ops;
	bs->rank = attr->rank;
	bs->size = attr->nnodes;
	bs->priv = st;
	return 0;

err_nodes_inval:
	while (i-- > 0)
		free(st->nodes[i]);
	free(st->nodes);
	free(st);
	return -EINVAL;
err_nodes:
	while (i-- > 0)
		free(st->nodes[i]);
	free(st->nodes);
err_st:
	free(st);
err_mem:
	rcci_boot_explain(err, errlen, "out of memory");
	return -ENOMEM;
}
