/* SPDX-License-Identifier: BSD-3-Clause */
/* "host:port" strings to socket addresses and back, shared by all transports. */
#ifndef RCC_CORE_ADDR_H
#define RCC_CORE_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/*
 * Split "host:port", "[v6]:port", ":port", "port" or "host" into parts.
 * An empty host stays empty; a missing port becomes RCC_DEFAULT_PORT.
 * Returns 0 or -EINVAL (malformed, port out of range, parts too long).
 */
int rcci_addr_split(const char *str, char *host, size_t hostlen, char *port, size_t portlen);

/* Resolve to one socket address; passive selects the listen form (an empty
 * host means every IPv4 address). -ENOENT: unknown host; -EINVAL: malformed. */
int rcci_addr_resolve(const char *str, bool passive, struct sockaddr_storage *ss, socklen_t *len);

/* "a.b.c.d:port" or "[v6]:port". */
void rcci_addr_format(const struct sockaddr *sa, char *buf, size_t n);

/* Port of an IPv4/IPv6 address in host order, 0 otherwise. */
int rcci_addr_port(const struct sockaddr *sa);

#endif
