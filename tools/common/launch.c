/* SPDX-License-Identifier: BSD-3-Clause */
/* What the tools share when a launcher starts them (docs/launch.md). */
#include "launch.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opts.h"
#include "rcc/util.h"

static bool wildcard(const char *host)
{
	return !*host || !strcmp(host, "0.0.0.0") || !strcmp(host, "::") || !strcmp(host, "[::]");
}

void launch_host(const struct rcc_bootstrap *bs, const char *bind, char *buf, size_t len)
{
	struct ifaddrs *ifs, *i;

	if (bind && !wildcard(bind)) {
		snprintf(buf, len, "%s", bind);
		return;
	}
	if (rcc_bootstrap_local_host(bs, buf, len) == 0)
		return;
	snprintf(buf, len, "127.0.0.1");
	if (getifaddrs(&ifs))
		return;
	for (i = ifs; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & IFF_UP) &&
		    !(i->ifa_flags & IFF_LOOPBACK)) {
			inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, buf,
				  (socklen_t)len);
			break;
		}
	freeifaddrs(ifs);
}

void launch_pair_open(const char *prog, struct rcc_bootstrap **bs)
{
	char err[RCC_BOOTSTRAP_ERROR_MAX];
	int rc = rcc_bootstrap_open(NULL, bs, err, sizeof(err));

	if (rc == -ENOENT) {
		*bs = NULL; /* nothing launched us */
		return;
	}
	if (rc) {
		fprintf(stderr, "%s: cannot start under a launcher: %s\n", prog, err);
		exit(1);
	}
	if (rcc_bootstrap_size(*bs) != 2) {
		int n = rcc_bootstrap_size(*bs);
		rcc_bootstrap_close(*bs);
		*bs = NULL;
		usage_error(prog,
			    "under a launcher %s runs as 2 ranks (0 serves, 1 measures), not %d; "
			    "or give the client its HOST",
			    prog, n);
	}
}

#define ENTRY 300 /* one "host:port" */

int launch_pair_publish(const char *prog, struct rcc_bootstrap *bs, const char *bind, int port,
			int timeout_ms, bool quiet)
{
	char host[256], mine[ENTRY], all[2 * ENTRY];
	size_t lens[2];
	int rdv = rcc_bootstrap_rendezvous_port(bs);

	launch_host(bs, bind, host, sizeof(host));
	join_host_port(mine, sizeof(mine), host, port);
	if (rdv > 0) { /* for scripts that gave rank 0 port 0 */
		char at[ENTRY];
		join_host_port(at, sizeof(at), host, rdv);
		printf("%s: rank 0: rendezvous listening on %s\n", prog, at);
		fflush(stdout);
	}
	if (rcc_bootstrap_allgather(bs, mine, strlen(mine), all, ENTRY, lens, timeout_ms)) {
		fprintf(stderr, "%s: rank 0: address exchange (%s bootstrap) failed: %s\n", prog,
			rcc_bootstrap_backend_name(bs), rcc_bootstrap_error(bs));
		return -1;
	}
	if (!quiet) {
		printf("%s: rank 0: serving rank 1 at %s\n", prog, mine);
		fflush(stdout);
	}
	return 0;
}

int launch_pair_find(const char *prog, struct rcc_bootstrap *bs, char *host, size_t hostlen,
		     int *port, int timeout_ms)
{
	char all[2 * ENTRY], entry[ENTRY], esc[400];
	size_t lens[2];

	if (rcc_bootstrap_allgather(bs, NULL, 0, all, ENTRY, lens, timeout_ms)) {
		fprintf(stderr, "%s: rank 1: address exchange (%s bootstrap) failed: %s\n", prog,
			rcc_bootstrap_backend_name(bs), rcc_bootstrap_error(bs));
		return -1;
	}
	size_t n = lens[0] < ENTRY - 1 ? lens[0] : ENTRY - 1;
	memcpy(entry, all, n);
	entry[n] = 0;
	if (split_host_port(entry, host, hostlen, port) || !*port) {
		rcc_text_escape(esc, sizeof(esc), entry, n);
		fprintf(stderr, "%s: rank 1: rank 0 published an address we cannot use: '%s'\n",
			prog, esc);
		return -1;
	}
	return 0;
}
