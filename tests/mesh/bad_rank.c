/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A rank of an env-rendezvous job (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)
 * that publishes whatever text it is given as its address -- control
 * characters included -- in rcc-mesh's address exchange, then leaves. For
 * tests/mesh/peer-text.sh: the other ranks must print it escaped.
 *
 *   mesh_bad_rank TEXT
 * Exit: 0 published, 1 the exchange failed, 2 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rcc/bootstrap.h>

int main(int argc, char **argv)
{
	struct rcc_bootstrap_attr a = { .backend = RCC_BOOTSTRAP_ENV };
	struct rcc_bootstrap *bs;
	char err[RCC_BOOTSTRAP_ERROR_MAX];
	/* rcc-mesh's stride: its node address field less the NUL */
	enum {
		STRIDE = 299
	};

	if (argc != 2 || strlen(argv[1]) > STRIDE) {
		fprintf(stderr, "usage: %s TEXT (at most %d bytes)\n", argv[0], STRIDE);
		return 2;
	}
	if (rcc_bootstrap_open(&a, &bs, err, sizeof(err))) {
		fprintf(stderr, "bad rank: %s\n", err);
		return 1;
	}
	int n = rcc_bootstrap_size(bs);
	char *all = calloc((size_t)n, STRIDE);
	size_t *lens = calloc((size_t)n, sizeof(*lens));
	int rc = all && lens ? rcc_bootstrap_allgather(bs, argv[1], strlen(argv[1]), all, STRIDE,
						       lens, 20000) :
			       -1;
	if (rc)
		fprintf(stderr, "bad rank: exchange failed: %s\n", rcc_bootstrap_error(bs));
	free(all);
	free(lens);
	rcc_bootstrap_close(bs);
	return rc ? 1 : 0;
}
