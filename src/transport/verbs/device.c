/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Devices: choosing device, port and GID for a context, and describing every
 * device for rcc_device_list() (what rcc-info prints).
 */
#include <endian.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "verbs.h"

int rcci_verbs_mtu_bytes(enum ibv_mtu mtu)
{
	switch (mtu) {
	case IBV_MTU_256:
		return 256;
	case IBV_MTU_512:
		return 512;
	case IBV_MTU_1024:
		return 1024;
	case IBV_MTU_2048:
		return 2048;
	case IBV_MTU_4096:
		return 4096;
	}
	return 0;
}

static bool gid_is_zero(const union ibv_gid *g)
{
	static const uint8_t zero[16];
	return !memcmp(g->raw, zero, sizeof(zero));
}

static bool gid_is_v4mapped(const union ibv_gid *g)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	return !memcmp(g->raw, prefix, sizeof(prefix));
}

/* sysfs spells RoCE v2 "RoCE v2", RoCE v1 "IB/RoCE v1". */
static int sysfs_gid_type(struct ibv_context *vc, uint8_t port, int idx)
{
	char path[IBV_SYSFS_PATH_MAX + 64], buf[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/ports/%u/gid_attrs/types/%d", vc->device->ibdev_path, port,
		 idx);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	if (strstr(buf, "v2"))
		return IBV_GID_TYPE_ROCE_V2;
	if (strstr(buf, "v1"))
		return IBV_GID_TYPE_ROCE_V1;
	return IBV_GID_TYPE_IB;
}

/*
 * One GID table entry: 0 and the entry, -ENODATA for an unused slot, another
 * negative errno on failure. Falls back to ibv_query_gid + sysfs on kernels
 * without the extended query.
 */
static int query_gid(struct ibv_context *vc, uint8_t port, int idx, bool eth,
		     struct ibv_gid_entry *e)
{
	int rc = ibv_query_gid_ex(vc, port, (uint32_t)idx, e, 0);

	if (rc == 0)
		return gid_is_zero(&e->gid) ? -ENODATA : 0;
	if (rc == ENODATA || rc == EINVAL)
		return -ENODATA;
	memset(e, 0, sizeof(*e));
	if (ibv_query_gid(vc, port, idx, &e->gid))
		return -errno ? -errno : -EIO;
	if (gid_is_zero(&e->gid))
		return -ENODATA;
	e->gid_index = (uint32_t)idx;
	e->port_num = port;
	int t = eth ? sysfs_gid_type(vc, port, idx) : IBV_GID_TYPE_IB;
	e->gid_type = t < 0 ? IBV_GID_TYPE_ROCE_V1 : (uint32_t)t;
	return 0;
}

/* Automatic GID: on Ethernet the RoCE v2 GID that maps an IPv4 address (what
 * rdma_cm uses for IPv4), else any RoCE v2 GID, else index 0. */
static int auto_gid_index(struct ibv_context *vc, uint8_t port, const struct ibv_port_attr *pa)
{
	int v2_any = -1;

	if (pa->link_layer != IBV_LINK_LAYER_ETHERNET)
		return 0;
	for (int i = 0; i < pa->gid_tbl_len; i++) {
		struct ibv_gid_entry e;
		if (query_gid(vc, port, i, true, &e))
			continue;
		if (e.gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		if (gid_is_v4mapped(&e.gid))
			return i;
		if (v2_any < 0)
			v2_any = i;
	}
	return v2_any >= 0 ? v2_any : 0;
}

static int pick_port(struct ibv_context *vc, int want, uint8_t *port, struct ibv_port_attr *pa)
{
	struct ibv_device_attr da;

	if (ibv_query_device(vc, &da))
		return -errno ? -errno : -EIO;
	for (int p = 1; p <= da.phys_port_cnt; p++) {
		if (want && p != want)
			continue;
		if (ibv_query_port(vc, (uint8_t)p, pa))
			continue;
		if (pa->state == IBV_PORT_ACTIVE) {
			*port = (uint8_t)p;
			return 0;
		}
		if (want)
			log_warn("verbs: port %d of %s is not ACTIVE (%s)", p,
				 ibv_get_device_name(vc->device), ibv_port_state_str(pa->state));
	}
	return -ENODEV;
}

int rcci_verbs_select(struct verbs_ctx *ctx, const struct rcc_ctx_attr *attr)
{
	const char *want = attr->device && attr->device[0] ? attr->device : NULL;
	struct ibv_port_attr pa;
	int n = 0, rc = -ENODEV;

	errno = 0;
	ctx->devs = rdma_get_devices(&n);
	if (!ctx->devs || n == 0) {
		if (errno == ENOSYS || errno == ENOENT || !ctx->devs)
			log_info("verbs: no RDMA devices (%s)",
				 errno == ENOSYS ? "the kernel has no RDMA support" :
						   "none present or no permission");
		else
			log_info("verbs: no RDMA devices");
		if (ctx->devs)
			rdma_free_devices(ctx->devs);
		ctx->devs = NULL;
		return -ENODEV;
	}
	for (int i = 0; i < n; i++) {
		struct ibv_context *vc = ctx->devs[i];
		const char *name = ibv_get_device_name(vc->device);
		if (want && strcmp(name, want))
			continue;
		rc = pick_port(vc, attr->port, &ctx->port, &pa);
		if (rc == 0) {
			ctx->verbs = vc;
			break;
		}
		if (want)
			log_warn("verbs: device %s has no ACTIVE port%s", name,
				 attr->port ? " with that number" : "");
	}
	if (!ctx->verbs) {
		if (want)
			log_info("verbs: no usable device named %s", want);
		else
			log_info("verbs: no device with an ACTIVE port");
		rc = -ENODEV;
		goto err;
	}
	if (ibv_query_device(ctx->verbs, &ctx->dev_attr)) {
		rc = -errno ? -errno : -EIO;
		goto err;
	}
	ctx->eth = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
	ctx->lid = pa.lid;
	ctx->mtu = pa.active_mtu;
	if (attr->gid_index == RCC_GID_INDEX_ZERO)
		ctx->gid_index = 0;
	else if (attr->gid_index > 0)
		ctx->gid_index = attr->gid_index;
	else
		ctx->gid_index = auto_gid_index(ctx->verbs, ctx->port, &pa);
	if (ctx->gid_index >= pa.gid_tbl_len ||
	    ibv_query_gid(ctx->verbs, ctx->port, ctx->gid_index, &ctx->gid)) {
		log_error("verbs: GID index %d of %s port %u cannot be read", ctx->gid_index,
			  ibv_get_device_name(ctx->verbs->device), ctx->port);
		rc = -EINVAL;
		goto err;
	}
	if (ctx->eth && gid_is_zero(&ctx->gid))
		log_warn("verbs: GID index %d is empty; manual bring-up will not work",
			 ctx->gid_index);
	{
		char g[64];
		const uint8_t *r = ctx->gid.raw;
		snprintf(g, sizeof(g),
			 "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
			 r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11],
			 r[12], r[13], r[14], r[15]);
		log_info("verbs: device %s port %u (%s, active MTU %d), GID index %d (%s)",
			 ibv_get_device_name(ctx->verbs->device), ctx->port,
			 ctx->eth ? "Ethernet" : "InfiniBand", rcci_verbs_mtu_bytes(ctx->mtu),
			 ctx->gid_index, g);
	}
	return 0;

err:
	rdma_free_devices(ctx->devs);
	ctx->devs = NULL;
	ctx->verbs = NULL;
	return rc;
}

/* ------------------------------------------------------------ device list */

static void copy_str(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "");
}

static const char *node_type_name(enum ibv_node_type t)
{
	switch (t) {
	case IBV_NODE_CA:
		return "CA";
	case IBV_NODE_SWITCH:
		return "SWITCH";
	case IBV_NODE_ROUTER:
		return "ROUTER";
	case IBV_NODE_RNIC:
		return "RNIC";
	case IBV_NODE_USNIC:
		return "USNIC";
	case IBV_NODE_USNIC_UDP:
		return "USNIC_UDP";
	case IBV_NODE_UNSPECIFIED:
		break;
	case IBV_NODE_UNKNOWN:
		break;
	}
	return "unknown";
}

static const char *port_state_name(enum ibv_port_state s)
{
	switch (s) {
	case IBV_PORT_NOP:
		return "NOP";
	case IBV_PORT_DOWN:
		return "DOWN";
	case IBV_PORT_INIT:
		return "INIT";
	case IBV_PORT_ARMED:
		return "ARMED";
	case IBV_PORT_ACTIVE:
		return "ACTIVE";
	case IBV_PORT_ACTIVE_DEFER:
		return "ACTIVE_DEFER";
	}
	return "unknown";
}

static const char *gid_type_name(uint32_t t)
{
	switch (t) {
	case IBV_GID_TYPE_ROCE_V1:
		return "RoCE v1";
	case IBV_GID_TYPE_ROCE_V2:
		return "RoCE v2";
	default:
		return "IB";
	}
}

static void free_ports(struct rcc_device_info *d)
{
	for (int p = 0; p < d->num_ports; p++)
		free(d->ports[p].gids);
	free(d->ports);
	d->ports = NULL;
}

static int describe_port(struct ibv_context *vc, uint8_t port, struct rcc_port_info *pi)
{
	struct ibv_port_attr pa;
	bool eth;

	if (ibv_query_port(vc, port, &pa))
		return -errno ? -errno : -EIO;
	eth = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
	pi->port = port;
	copy_str(pi->state, sizeof(pi->state), port_state_name(pa.state));
	copy_str(pi->link_layer, sizeof(pi->link_layer), eth ? "Ethernet" : "InfiniBand");
	pi->active_mtu = rcci_verbs_mtu_bytes(pa.active_mtu);
	pi->max_mtu = rcci_verbs_mtu_bytes(pa.max_mtu);
	pi->lid = pa.lid;
	pi->num_gids = 0;
	pi->gids = NULL;
	if (pa.gid_tbl_len <= 0)
		return 0;
	pi->gids = calloc((size_t)pa.gid_tbl_len, sizeof(*pi->gids));
	if (!pi->gids)
		return -ENOMEM;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		struct ibv_gid_entry e;
		if (query_gid(vc, port, i, eth, &e))
			continue;
		struct rcc_gid_info *g = &pi->gids[pi->num_gids++];
		g->index = i;
		memcpy(g->gid, e.gid.raw, sizeof(g->gid));
		copy_str(g->type, sizeof(g->type), eth ? gid_type_name(e.gid_type) : "IB");
		g->netdev[0] = '\0';
		char ifname[IF_NAMESIZE];
		if (eth && e.ndev_ifindex && if_indextoname(e.ndev_ifindex, ifname))
			copy_str(g->netdev, sizeof(g->netdev), ifname);
	}
	return 0;
}

static int describe_device(struct ibv_device *dev, struct rcc_device_info *d)
{
	struct ibv_device_attr da;
	struct ibv_context *vc;
	int rc = 0;

	copy_str(d->name, sizeof(d->name), ibv_get_device_name(dev));
	copy_str(d->node_type, sizeof(d->node_type), node_type_name(dev->node_type));
	vc = ibv_open_device(dev);
	if (!vc) {
		log_warn("verbs: cannot open %s: %s", d->name, strerror(errno));
		return 0; /* listed with what the device struct tells */
	}
	if (ibv_query_device(vc, &da)) {
		rc = -errno ? -errno : -EIO;
		goto out;
	}
	d->node_guid = be64toh(da.node_guid);
	copy_str(d->fw_ver, sizeof(d->fw_ver), da.fw_ver);
	d->max_qp = da.max_qp;
	d->max_qp_wr = da.max_qp_wr;
	d->max_sge = da.max_sge;
	d->max_cqe = da.max_cqe;
	d->max_mr = da.max_mr;
	d->max_mr_size = da.max_mr_size;
	d->max_qp_rd_atom = da.max_qp_rd_atom;
	d->ports = calloc(da.phys_port_cnt ? da.phys_port_cnt : 1, sizeof(*d->ports));
	if (!d->ports) {
		rc = -ENOMEM;
		goto out;
	}
	for (int p = 1; p <= da.phys_port_cnt; p++) {
		rc = describe_port(vc, (uint8_t)p, &d->ports[d->num_ports]);
		if (rc == -ENOMEM)
			goto out_ports;
		if (rc == 0)
			d->num_ports++;
		rc = 0;
	}
	goto out;

out_ports:
	free_ports(d);
	d->num_ports = 0;
out:
	ibv_close_device(vc);
	return rc;
}

int rcci_verbs_device_list(struct rcc_device_info **devices, int *count)
{
	struct ibv_device **list;
	struct rcc_device_info *out;
	int n = 0, rc = 0;

	errno = 0;
	list = ibv_get_device_list(&n);
	if (!list) {
		log_debug("verbs: ibv_get_device_list: %s", strerror(errno));
		return -ENODEV;
	}
	out = calloc(n ? (size_t)n : 1, sizeof(*out));
	if (!out) {
		rc = -ENOMEM;
		goto out_list;
	}
	for (int i = 0; i < n; i++) {
		rc = describe_device(list[i], &out[i]);
		if (rc) {
			rcci_verbs_device_list_free(out, i + 1);
			goto out_list;
		}
	}
	*devices = out;
	*count = n;
out_list:
	ibv_free_device_list(list);
	return rc;
}

void rcci_verbs_device_list_free(struct rcc_device_info *devices, int count)
{
	if (!devices)
		return;
	for (int i = 0; i < count; i++)
		free_ports(&devices[i]);
	free(devices);
}
