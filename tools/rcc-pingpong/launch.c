/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rcc-pingpong under a launcher (docs/launch.md): 'mpirun -np 2 rcc-pingpong'
 * with no HOST. Rank 0 is the server (on a free port, for this one client),
 * rank 1 the client; the server's address goes through the bootstrap.
 * Started by nothing (no rank in the environment), a run without HOST is
 * the plain server it has always been.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launch.h"
#include "opts.h"
#include "pingpong.h"
#include "rcc/util.h"

static const char *prog = "rcc-pingpong";

void pp_launch_open(struct pp_opts *o)
{
	char err[RCC_BOOTSTRAP_ERROR_MAX];
	int rc = rcc_bootstrap_open(NULL, &o->boot, err, sizeof(err));

	if (rc == -ENOENT)
		return; /* nothing launched us: a server, as always */
	if (rc) {
		fprintf(stderr, "%s: cannot start under a launcher: %s\n", prog, err);
		exit(1);
	}
	if (rcc_bootstrap_size(o->boot) != 2) {
		int n = rcc_bootstrap_size(o->boot);
		rcc_bootstrap_close(o->boot);
		o->boot = NULL;
		usage_error(prog,
			    "under a launcher rcc-pingpong runs as 2 ranks (0 serves, 1 measures), "
			    "not %d; or give the client its HOST",
			    n);
	}
	if (rcc_bootstrap_rank(o->boot) == 0) {
		o->once = true; /* the job ends when its one client does */
		o->port = 0;
		o->json = false; /* the same command line for both: figures are rank 1's */
	} else {
		o->server = false;
	}
}

int pp_launch_publish(const struct pp_opts *o, int port)
{
	char host[256], mine[300], all[2 * 300];
	size_t lens[2];

	launch_host(o->boot, o->bind, host, sizeof(host));
	join_host_port(mine, sizeof(mine), host, port);
	int rdv = rcc_bootstrap_rendezvous_port(o->boot);
	if (rdv > 0) { /* for scripts that gave rank 0 port 0 */
		char at[300];
		join_host_port(at, sizeof(at), host, rdv);
		printf("%s: rank 0: rendezvous listening on %s\n", prog, at);
		fflush(stdout);
	}
	if (rcc_bootstrap_allgather(o->boot, mine, strlen(mine), all, 300, lens, o->timeout_ms)) {
		fprintf(stderr, "%s: rank 0: address exchange (%s bootstrap) failed: %s\n", prog,
			rcc_bootstrap_backend_name(o->boot), rcc_bootstrap_error(o->boot));
		return -1;
	}
	if (!o->quiet)
		printf("%s: rank 0: serving rank 1 at %s\n", prog, mine);
	return 0;
}

int pp_launch_find_server(struct pp_opts *o)
{
	char all[2 * 300], entry[300], esc[400];
	size_t lens[2];

	if (rcc_bootstrap_allgather(o->boot, NULL, 0, all, 300, lens, o->timeout_ms)) {
		fprintf(stderr, "%s: rank 1: address exchange (%s bootstrap) failed: %s\n", prog,
			rcc_bootstrap_backend_name(o->boot), rcc_bootstrap_error(o->boot));
		return -1;
	}
	memcpy(entry, all, lens[0] < 299 ? lens[0] : 299);
	entry[lens[0] < 299 ? lens[0] : 299] = 0;
	if (split_host_port(entry, o->host_buf, sizeof(o->host_buf), &o->port) || !o->port) {
		rcc_text_escape(esc, sizeof(esc), entry, strlen(entry));
		fprintf(stderr, "%s: rank 1: rank 0 published an address we cannot use: '%s'\n",
			prog, esc);
		return -1;
	}
	o->host = o->host_buf;
	return 0;
}
