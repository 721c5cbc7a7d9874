/* SPDX-License-Identifier: BSD-3-Clause */
/* rcc-xfer: file transfer by RDMA WRITE. See 'rcc-xfer --help' and docs/rcc-xfer.md. */
#include <string.h>

#include "cmdline.h"
#include "auth.h"
#include "cli.h"
#include "exitcode.h"
#include "output.h"
#include "session.h"
#include "stop.h"

static int keygen(const struct xfer_opts *o)
{
	int rc = key_generate(o->keygen_path);

	if (rc) {
		out_error("cannot create %s: %s", o->keygen_path, strerror(-rc));
		return XEXIT_LOCAL;
	}
	out_info("wrote a new key to %s (mode 600); give the same file to both sides",
		 o->keygen_path);
	return XEXIT_OK;
}

int main(int argc, char **argv)
{
	struct xfer_opts o;

	cli_parse(argc, argv, &o);
	cli_check_done("rcc-xfer");
	out_init(o.out);
	if (stop_install()) {
		out_error("cannot install signal handlers");
		return XEXIT_LOCAL;
	}
	switch (o.cmd) {
	case CMD_SEND:
		return xfer_send(&o);
	case CMD_RECV:
		return xfer_recv(&o);
	case CMD_KEYGEN:
		return keygen(&o);
	}
	return XEXIT_USAGE;
}
