/* SPDX-License-Identifier: BSD-3-Clause */
/* What the tools share when a launcher starts them (docs/launch.md). */
#include "launch.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

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
