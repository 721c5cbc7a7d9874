/* SPDX-License-Identifier: BSD-3-Clause */
/* What the tools share when a launcher starts them (docs/launch.md). */
#ifndef RCC_TOOLS_LAUNCH_H
#define RCC_TOOLS_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>

#include "rcc/bootstrap.h"

/*
 * The host part of the address a rank publishes, so the others can reach it:
 * --bind (when it is not a wildcard); else the address the bootstrap's route
 * to rank 0 uses (env); else the first IPv4 address of an interface that is
 * up and not loopback (PMIx has no connection of ours to look at); else
 * loopback, for a one-host job.
 */
void launch_host(const struct rcc_bootstrap *bs, const char *bind, char *buf, size_t len);

/*
 * A client/server tool as a launched pair (rank 0 serves, rank 1 measures).
 * launch_pair_open: *bs stays NULL when nothing launched us (the tool runs
 * as it always has); exits 1 when the bootstrap fails, 2 (usage) for a job
 * of other than 2 ranks. The rank is rcc_bootstrap_rank(*bs).
 */
void launch_pair_open(const char *prog, struct rcc_bootstrap **bs);
/* Rank 0, listening on port: give rank 1 our address (and say where the
 * rendezvous listens when it was given port 0). 0, or -1 after saying why. */
int launch_pair_publish(const char *prog, struct rcc_bootstrap *bs, const char *bind, int port,
			int timeout_ms, bool quiet);
/* Rank 1: the server's host and port. 0, or -1 after saying why. */
int launch_pair_find(const char *prog, struct rcc_bootstrap *bs, char *host, size_t hostlen,
		     int *port, int timeout_ms);

#endif
