/* SPDX-License-Identifier: BSD-3-Clause */
/* rcc-pingpong: a SEND/RECV ping-pong over rcc (seed: RDMA ping-pong with a
 * listener that hands each client to an agent). */
#include "pingpong.h"

int main(int argc, char **argv)
{
	struct pp_opts o;

	pp_parse(argc, argv, &o);
	return o.server ? pp_server(&o) : pp_client(&o);
}
