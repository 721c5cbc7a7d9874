/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rcc-info: the RDMA devices rcc can use, their ports and GID tables -- what to
 * look at first when a connection fails (port not ACTIVE, no RoCE v2 IPv4 GID,
 * an MTU mismatch). Uses only the public API.
 *
 * Exit status: 0 at least one device listed, 1 no device (or none named -d),
 * 2 usage error, 3 the device list could not be read.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cmdline.h"
#include "json.h"
#include "opts.h"
#include "rcc/rcc.h"

static const char *prog = "rcc-info";

/* Version of --json's layout (docs/json.md): bumped when a field changes
 * meaning or goes away, not when one is added. */
#define INFO_JSON_SCHEMA 1

static void help(const struct cli *c)
{
	printf("Usage: rcc-info [OPTION]...\n"
	       "List the RDMA devices rcc's verbs transport can use.\n"
	       "\n"
	       "For each device: node GUID, type and firmware; each port's state, link\n"
	       "layer, active/max MTU and LID; and the GID table with each GID's type (IB,\n"
	       "RoCE v1, RoCE v2), its address and netdev. rcc's automatic GID choice on\n"
	       "Ethernet is the RoCE v2 GID of an IPv4 address.\n"
	       "\n"
	       "Options:\n"
	       "  -v, --verbose            also device limits (QPs, WRs, SGEs, CQEs, MRs, RD\n"
	       "                           atomics)\n"
	       "\n"
	       "Common options:\n");
	cli_help_common(c, stdout);
	printf("\n"
	       "Without a device rcc still works: its tcp transport (-T tcp in the tools,\n"
	       "RCC_TRANSPORT_TCP in code; 'auto' falls back to it) needs no RDMA.\n"
	       "\n"
	       "Exit status:\n"
	       "  0  devices listed\n"
	       "  1  no RDMA device (or none named -d)\n"
	       "  2  usage error\n"
	       "  3  the device list could not be read\n");
}

static void gid_hex(const uint8_t g[16], char *out, size_t n)
{
	snprintf(out, n, "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
		 g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[11], g[12],
		 g[13], g[14], g[15]);
}

static bool gid_v4(const uint8_t g[16])
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	return !memcmp(g, prefix, sizeof(prefix));
}

/* "IPv4 10.0.2.15" or "IPv6 fe80::..." */
static void gid_addr(const uint8_t g[16], char *out, size_t n)
{
	char a[INET6_ADDRSTRLEN];
	if (gid_v4(g)) {
		inet_ntop(AF_INET, g + 12, a, sizeof(a));
		snprintf(out, n, "IPv4 %s", a);
	} else {
		inet_ntop(AF_INET6, g, a, sizeof(a));
		snprintf(out, n, "IPv6 %s", a);
	}
}

static void guid_str(uint64_t v, char *out, size_t n)
{
	snprintf(out, n, "%04x:%04x:%04x:%04x", (unsigned)(v >> 48) & 0xffff,
		 (unsigned)(v >> 32) & 0xffff, (unsigned)(v >> 16) & 0xffff, (unsigned)v & 0xffff);
}

static void print_text(const struct rcc_device_info *d, bool verbose)
{
	char guid[32];

	guid_str(d->node_guid, guid, sizeof(guid));
	printf("%s: node type %s, node GUID %s, firmware %s\n", d->name, d->node_type, guid,
	       d->fw_ver[0] ? d->fw_ver : "-");
	if (verbose)
		printf("  limits: max_qp %d, max_qp_wr %d, max_sge %d, max_cqe %d, max_mr %d, "
		       "max_mr_size %" PRIu64 ", max_qp_rd_atom %d\n",
		       d->max_qp, d->max_qp_wr, d->max_sge, d->max_cqe, d->max_mr, d->max_mr_size,
		       d->max_qp_rd_atom);
	for (int p = 0; p < d->num_ports; p++) {
		const struct rcc_port_info *pi = &d->ports[p];
		printf("  port %d: state %s, link layer %s, active MTU %d, max MTU %d, LID %u\n",
		       pi->port, pi->state, pi->link_layer, pi->active_mtu, pi->max_mtu, pi->lid);
		if (pi->num_gids == 0)
			printf("    no GIDs%s\n", !strcmp(pi->link_layer, "Ethernet") ?
							  " (no IP address on the netdev?)" :
							  "");
		for (int i = 0; i < pi->num_gids; i++) {
			const struct rcc_gid_info *g = &pi->gids[i];
			char hex[48], addr[64];
			gid_hex(g->gid, hex, sizeof(hex));
			gid_addr(g->gid, addr, sizeof(addr));
			printf("    GID %3d  %s  %-8s %-10s %s\n", g->index, hex, g->type,
			       g->netdev[0] ? g->netdev : "-", addr);
		}
	}
}

/* s as a JSON string on stdout. */
static void put_json_str(const char *s)
{
	char buf[512];
	fputs(json_str(s, buf, sizeof(buf)), stdout);
}

static void print_json_device(const struct rcc_device_info *d)
{
	char guid[32];

	guid_str(d->node_guid, guid, sizeof(guid));
	printf("{\"name\":");
	put_json_str(d->name);
	printf(",\"node_type\":");
	put_json_str(d->node_type);
	printf(",\"node_guid\":\"%s\",\"fw_ver\":", guid);
	put_json_str(d->fw_ver);
	printf(",\"max_qp\":%d,\"max_qp_wr\":%d,\"max_sge\":%d,\"max_cqe\":%d,\"max_mr\":%d,"
	       "\"max_mr_size\":%" PRIu64 ",\"max_qp_rd_atom\":%d,\"ports\":[",
	       d->max_qp, d->max_qp_wr, d->max_sge, d->max_cqe, d->max_mr, d->max_mr_size,
	       d->max_qp_rd_atom);
	for (int p = 0; p < d->num_ports; p++) {
		const struct rcc_port_info *pi = &d->ports[p];
		printf("%s{\"port\":%d,\"state\":", p ? "," : "", pi->port);
		put_json_str(pi->state);
		printf(",\"link_layer\":");
		put_json_str(pi->link_layer);
		printf(",\"active_mtu\":%d,\"max_mtu\":%d,\"lid\":%u,\"gids\":[", pi->active_mtu,
		       pi->max_mtu, pi->lid);
		for (int i = 0; i < pi->num_gids; i++) {
			const struct rcc_gid_info *g = &pi->gids[i];
			char hex[48], addr[64];
			gid_hex(g->gid, hex, sizeof(hex));
			gid_addr(g->gid, addr, sizeof(addr));
			printf("%s{\"index\":%d,\"gid\":\"%s\",\"type\":", i ? "," : "", g->index,
			       hex);
			put_json_str(g->type);
			printf(",\"netdev\":");
			put_json_str(g->netdev);
			printf(",\"address\":");
			put_json_str(strchr(addr, ' ') + 1);
			printf(",\"family\":\"%s\"}", gid_v4(g->gid) ? "ipv4" : "ipv6");
		}
		printf("]}");
	}
	printf("]}");
}

/* Why there is no device, as precisely as the system tells. */
static const char *no_device_reason(int rc)
{
	struct stat st;
	if (rc == -ENOSYS)
		return "this rcc was built without the verbs transport (no rdma-core at build time)";
	if (stat("/sys/class/infiniband", &st) != 0)
		return "the kernel has no RDMA support loaded (no /sys/class/infiniband)";
	if (stat("/dev/infiniband", &st) != 0)
		return "RDMA devices exist but /dev/infiniband is missing (ib_uverbs not loaded?)";
	return "no RDMA device is present (no NIC with RDMA, no Soft-RoCE link: "
	       "'rdma link add rxe0 type rxe netdev IFACE')";
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	struct rcc_ctx_attr attr = { 0 };
	struct cli c = {
		.prog = prog,
		.take = CLI_DEVICE | CLI_JSON,
		.shorts = "v",
		.longs = longopts,
		.help = help,
		.device_help = "only this device",
		.ctx = &attr,
	};
	const char *dev;
	bool verbose = false, json;
	struct rcc_device_info *devs = NULL;
	int n = 0, r, rc, shown = 0;

	while ((r = cli_next(&c, argc, argv)) != -1)
		if (r == 'v')
			verbose = true;
	cli_finish(&c);
	if (optind != argc)
		usage_error(prog, "unexpected argument '%s'", argv[optind]);
	cli_check_done(prog);
	dev = attr.device;
	json = c.json;

	rc = rcc_device_list(&devs, &n);
	if (rc && rc != -ENODEV && rc != -ENOSYS) {
		fprintf(stderr, "%s: cannot list RDMA devices: %s\n", prog, rcc_strerror(rc));
		return 3;
	}
	if (rc)
		n = 0;
	if (json) {
		printf("{\"tool\":\"rcc-info\",\"schema\":%d,\"rcc_version\":\"%s\",\"devices\":[",
		       INFO_JSON_SCHEMA, rcc_version());
		for (int i = 0; i < n; i++) {
			if (dev && strcmp(dev, devs[i].name))
				continue;
			printf("%s", shown++ ? "," : "");
			print_json_device(&devs[i]);
		}
		printf("]");
		if (!shown) {
			printf(",\"reason\":");
			put_json_str(dev && n ? "no device with that name" : no_device_reason(rc));
		}
		printf("}\n");
	} else {
		for (int i = 0; i < n; i++) {
			if (dev && strcmp(dev, devs[i].name))
				continue;
			if (shown++)
				putchar('\n');
			print_text(&devs[i], verbose);
		}
		if (!shown && dev) {
			fprintf(stderr, "%s: no RDMA device named '%s'", prog, dev);
			if (n) {
				fputs("; there are:", stderr);
				for (int i = 0; i < n; i++)
					fprintf(stderr, " %s", devs[i].name);
				fputc('\n', stderr);
			} else {
				fprintf(stderr, ": %s\n", no_device_reason(rc));
			}
		} else if (!shown) {
			printf("No RDMA devices: %s.\n"
			       "rcc's tcp transport works without one: use '--transport tcp' with the\n"
			       "rcc tools (or RCC_TRANSPORT_TCP in rcc_ctx_attr; the default 'auto'\n"
			       "falls back to tcp by itself).\n",
			       no_device_reason(rc));
		}
	}
	if (!rc)
		rcc_device_list_free(devs, n);
	return shown ? 0 : 1;
}
