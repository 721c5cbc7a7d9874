/* SPDX-License-Identifier: BSD-3-Clause */
/* rcc-pingpong: a SEND/RECV ping-pong over rcc (seed: RDMA ping-pong with a
 * listener that hands each client to an agent). */
#include <stdio.h>

#include "cmdline.h"
#include "pingpong.h"

int main(int argc, char **argv)
{
	struct pp_opts o;
	int status;

	/* A server's progress lines (clients come and go) must reach a log file or a
	 * pipe as they happen, not when the server exits. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	pp_parse(argc, argv, &o);
	cli_check_done("rcc-pingpong");
	if (o.boot && !o.server && pp_launch_find_server(&o))
		status = 1;
	else
		status = o.server ? pp_server(&o) : pp_client(&o);
	rcc_bootstrap_close(o.boot);
	return status;
}
