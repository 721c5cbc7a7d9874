/* rcc-perf: perftest-class latency and bandwidth benchmark (see perf.h). */
#include <signal.h>

#include "perf.h"

int main(int argc, char **argv)
{
	struct perf_config cfg;

	perf_parse(argc, argv, &cfg);
	/* A peer that vanishes must show up as an error, not kill us. */
	signal(SIGPIPE, SIG_IGN);
	return cfg.host ? perf_client(&cfg) : perf_server(&cfg);
}
