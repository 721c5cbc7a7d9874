/* SPDX-License-Identifier: BSD-3-Clause */
/* The node list: "host:port" entries from --nodes or a hostfile; rank = position. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mesh.h"
#include "opts.h"

int node_parse(const char *s, struct node *nd, char *err, size_t errlen)
{
	int port = 0;

	memset(nd, 0, sizeof(*nd));
	/* the tools' one HOST:PORT grammar (docs/cli.md); a node needs its port */
	if (split_host_port(s, nd->host, sizeof(nd->host), &port) || !port) {
		snprintf(err, errlen, "'%s': expected HOST:PORT or [IPV6]:PORT, port 1..65535", s);
		return -EINVAL;
	}
	nd->port = port;
	join_host_port(nd->addr, sizeof(nd->addr), nd->host, nd->port);
	return 0;
}

static int append(struct node **nodes, int *n, const char *entry, char *err, size_t errlen)
{
	struct node nd, *grown;
	int rc = node_parse(entry, &nd, err, errlen);

	if (rc)
		return rc;
	if (*n >= MESH_MAX_NODES) {
		snprintf(err, errlen, "more than %d nodes", MESH_MAX_NODES);
		return -E2BIG;
	}
	for (int i = 0; i < *n; i++)
		if (!strcmp((*nodes)[i].addr, nd.addr)) {
			snprintf(err, errlen, "%s is listed twice (ranks %d and %d)", nd.addr, i,
				 *n);
			return -EINVAL;
		}
	grown = realloc(*nodes, (size_t)(*n + 1) * sizeof(*grown));
	if (!grown) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	grown[*n] = nd;
	*nodes = grown;
	(*n)++;
	return 0;
}

int nodes_from_list(const char *list, struct node **nodes, int *n, char *err, size_t errlen)
{
	char *copy = strdup(list), *save = NULL;
	int rc = 0;

	if (!copy) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (char *tok = strtok_r(copy, ",", &save); tok && !rc; tok = strtok_r(NULL, ",", &save))
		rc = append(nodes, n, tok, err, errlen);
	free(copy);
	return rc;
}

/* One node per line; '#' starts a comment; blank lines are skipped. */
int nodes_from_file(const char *path, struct node **nodes, int *n, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char line[512];
	int rc = 0, lineno = 0;

	if (!f) {
		snprintf(err, errlen, "cannot open hostfile %s: %s", path, strerror(errno));
		return -errno;
	}
	while (!rc && fgets(line, sizeof(line), f)) {
		char *s = line, *end;
		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			snprintf(err, errlen, "%s:%d: line too long", path, lineno);
			rc = -EINVAL;
			break;
		}
		if ((end = strchr(s, '#')))
			*end = 0;
		while (*s == ' ' || *s == '\t')
			s++;
		end = s + strlen(s);
		while (end > s &&
		       (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
			*--end = 0;
		if (!*s)
			continue;
		char inner[300];
		rc = append(nodes, n, s, inner, sizeof(inner));
		if (rc)
			snprintf(err, errlen, "%s:%d: %s", path, lineno, inner);
	}
	fclose(f);
	return rc;
}
