/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rcc-mesh: the N-node full-mesh communication service (the seed's
 * mesh_comm_service): every node serves one rcc_server and N-1 rcc_clients,
 * and all of them move verified data at once. See rcc-mesh --help.
 */
#include <signal.h>
#include <stdio.h>

#include "cmdline.h"
#include "mesh.h"

int main(int argc, char **argv)
{
	struct mesh_opts o;
	struct mesh m;
	int status;

	/* progress lines reach a pipe or a log file as they happen (scripts wait for them) */
	setvbuf(stdout, NULL, _IOLBF, 0);
	mesh_parse(argc, argv, &o);
	cli_check_done("rcc-mesh");
	signal(SIGPIPE, SIG_IGN); /* a peer that vanishes must not kill us */
	if (mesh_open(&m, &o)) {
		mesh_opts_free(&o);
		return MESH_EXIT_FAIL;
	}
	status = mesh_run(&m);
	mesh_close(&m);
	mesh_opts_free(&o);
	return status;
}
