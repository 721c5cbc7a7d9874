/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rcc-pingpong under a launcher (docs/launch.md): 'mpirun -np 2 rcc-pingpong'
 * with no HOST. Rank 0 is the server (on a free port, for this one client),
 * rank 1 the client; the server's address goes through the bootstrap.
 * Started by nothing (no rank in the environment), a run without HOST is
 * the plain server it has always been.
 */
#include "launch.h"
#include "pingpong.h"

void pp_launch_open(struct pp_opts *o)
{
	launch_pair_open("rcc-pingpong", &o->boot);
	if (!o->boot)
		return;
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
	return launch_pair_publish("rcc-pingpong", o->boot, o->bind, port, o->timeout_ms, o->quiet);
}

int pp_launch_find_server(struct pp_opts *o)
{
	if (launch_pair_find("rcc-pingpong", o->boot, o->host_buf, sizeof(o->host_buf), &o->port,
			     o->timeout_ms))
		return -1;
	o->host = o->host_buf;
	return 0;
}
