/* SPDX-License-Identifier: BSD-3-Clause */
#include "addr.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "last_error.h"
#include "rcc/rcc.h"

static int copy_part(char *dst, size_t dstlen, const char *src, size_t n)
{
	if (n >= dstlen)
		return -EINVAL;
	memcpy(dst, src, n);
	dst[n] = '\0';
	return 0;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

int rcci_addr_split(const char *str, char *host, size_t hostlen, char *port, size_t portlen)
{
	const char *hs, *ps = NULL;
	size_t hn;

	if (!str || !host || !port || hostlen == 0 || portlen == 0)
		return -EINVAL;
	if (str[0] == '[') {
		const char *end = strchr(str, ']');
		if (!end)
			return -EINVAL;
		hs = str + 1;
		hn = (size_t)(end - hs);
		if (end[1] == ':')
			ps = end + 2;
		else if (end[1] != '\0')
			return -EINVAL;
	} else {
		const char *colon = strchr(str, ':');
		if (colon && strchr(colon + 1, ':')) {
			/* bare IPv6 address without a port */
			hs = str;
			hn = strlen(str);
		} else if (colon) {
			hs = str;
			hn = (size_t)(colon - str);
			ps = colon + 1;
		} else if (all_digits(str)) {
			hs = str;
			hn = 0;
			ps = str;
		} else {
			hs = str;
			hn = strlen(str);
		}
	}
	if (copy_part(host, hostlen, hs, hn))
		return -EINVAL;
	if (!ps) {
		if (snprintf(port, portlen, "%d", RCC_DEFAULT_PORT) >= (int)portlen)
			return -EINVAL;
		return 0;
	}
	if (!all_digits(ps) || strlen(ps) > 5 || atoi(ps) > 65535)
		return -EINVAL;
	return copy_part(port, portlen, ps, strlen(ps));
}

int rcci_addr_resolve(const char *str, bool passive, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[256], port[8];
	struct addrinfo hints, *res = NULL;
	int rc;

	if (!ss || !len)
		return -EINVAL;
	rc = rcci_addr_split(str, host, sizeof(host), port, sizeof(port));
	if (rc)
		return rcci_fail(rc,
				 "'%s' is not an address: want HOST, HOST:PORT, [IPv6]:PORT or "
				 "PORT, with PORT 0..65535",
				 str ? str : "(null)");
	if (!host[0])
		strcpy(host, passive ? "0.0.0.0" : "127.0.0.1");
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc) {
		if (rc == EAI_NONAME || rc == EAI_NODATA || rc == EAI_AGAIN || rc == EAI_FAIL)
			return rcci_fail(-ENOENT, "unknown host '%s': %s", host, gai_strerror(rc));
		return rcci_fail(-EINVAL, "'%s': %s", str, gai_strerror(rc));
	}
	if (res->ai_addrlen > sizeof(*ss)) {
		freeaddrinfo(res);
		return -EINVAL;
	}
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

void rcci_addr_format(const struct sockaddr *sa, char *buf, size_t n)
{
	char ip[INET6_ADDRSTRLEN];

	if (!buf || n == 0)
		return;
	if (sa && sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
		snprintf(buf, n, "%s:%u", ip, ntohs(in->sin_port));
	} else if (sa && sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
		snprintf(buf, n, "[%s]:%u", ip, ntohs(in6->sin6_port));
	} else {
		snprintf(buf, n, "?");
	}
}

int rcci_addr_port(const struct sockaddr *sa)
{
	if (sa && sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	if (sa && sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return 0;
}
