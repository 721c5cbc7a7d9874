/* SPDX-License-Identifier: BSD-3-Clause */
#include "raw_listener.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

int raw_listener(char *addr, size_t len)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return -1;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) || listen(fd, 4) ||
	    getsockname(fd, (struct sockaddr *)&sin, &sl)) {
		close(fd);
		return -1;
	}
	snprintf(addr, len, "127.0.0.1:%d", ntohs(sin.sin_port));
	return fd;
}

void *raw_accept_and_close(void *arg)
{
	int c = accept(*(int *)arg, NULL, NULL);
	if (c >= 0)
		close(c);
	return NULL;
}
