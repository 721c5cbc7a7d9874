/* SPDX-License-Identifier: BSD-3-Clause */
/* rcc-perf: perftest-class latency and bandwidth benchmark (see perf.h). */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cmdline.h"
#include "launch.h"
#include "perf.h"

volatile sig_atomic_t perf_stop;

/* Ctrl-C or a `timeout`: stop at the next check, keep what was measured. */
static void on_stop(int sig) { perf_stop = sig; }

int main(int argc, char **argv)
{
	struct perf_config cfg;
	struct sigaction sa;

	/* a server's lines reach a pipe or a log as they happen (scripts wait for them) */
	setvbuf(stdout, NULL, _IOLBF, 0);
	perf_parse(argc, argv, &cfg);
	cli_check_done("rcc-perf");
	/* A peer that vanishes must show up as an error, not kill us. */
	signal(SIGPIPE, SIG_IGN);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	int status;
	if (cfg.boot && cfg.host &&
	    launch_pair_find(cfg.prog, cfg.boot, cfg.host_buf, sizeof(cfg.host_buf), &cfg.port,
			     cfg.timeout_ms))
		status = 1;
	else
		status = cfg.host ? perf_client(&cfg) : perf_server(&cfg);
	rcc_bootstrap_close(cfg.boot);
	return status;
}
