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

#endif
