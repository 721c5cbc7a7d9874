/* SPDX-License-Identifier: BSD-3-Clause */
/* Context: picks the transport and owns the count of live child objects. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/last_error.h"
#include "base/log.h"
#include "core/core.h"

static const struct rcc_transport_ops *ops_for(enum rcc_transport t)
{
	switch (t) {
	case RCC_TRANSPORT_TCP:
		return &rcci_tcp_ops;
	case RCC_TRANSPORT_VERBS:
#ifdef RCC_HAVE_VERBS
		return &rcci_verbs_ops;
#else
		return NULL;
#endif
	case RCC_TRANSPORT_AUTO:
		break;
	}
	return NULL;
}

static int open_with(const struct rcc_transport_ops *ops, enum rcc_transport t,
		     const struct rcc_ctx_attr *attr, struct rcc_ctx **out)
{
	struct rcc_ctx *ctx = calloc(1, ops->ctx_size);
	int rc;

	if (!ctx)
		return -ENOMEM;
	ctx->ops = ops;
	ctx->conn = &ops->conn;
	ctx->transport = t;
	atomic_init(&ctx->children, 0);
	rcci_events_init(&ctx->events);
	pthread_mutex_init(&ctx->mem_lock, NULL);
	rc = ops->ctx_open(ctx, attr);
	if (rc) {
		pthread_mutex_destroy(&ctx->mem_lock);
		rcci_events_fini(&ctx->events);
		free(ctx);
		if (t == RCC_TRANSPORT_VERBS && rc == -ENODEV)
			return rcci_fail(rc,
					 attr->device && attr->device[0] ?
						 "no usable RDMA device '%s'" :
						 "no usable RDMA device%s",
					 attr->device && attr->device[0] ? attr->device : "");
		return rcci_fail(rc, "cannot open the %s transport", rcc_transport_name(t));
	}
	*out = ctx;
	return 0;
}

/* The context attribute wins; RCC_SHM decides when it is left at auto. */
static int resolve_shm(const struct rcc_ctx_attr *in, struct rcc_ctx_attr *out)
{
	const char *env = getenv("RCC_SHM");

	*out = *in;
	if (in->shm < RCC_SHM_AUTO || in->shm > RCC_SHM_REQUIRE)
		return rcci_fail(-EINVAL, "unknown shm mode %d", (int)in->shm);
	if (in->shm != RCC_SHM_AUTO || !env || !*env || !strcmp(env, "auto"))
		return 0;
	if (!strcmp(env, "0"))
		out->shm = RCC_SHM_OFF;
	else if (!strcmp(env, "1"))
		out->shm = RCC_SHM_REQUIRE;
	else
		return rcci_fail(-EINVAL, "RCC_SHM must be 0, 1 or auto");
	return 0;
}

int rcc_ctx_open(const struct rcc_ctx_attr *in, struct rcc_ctx **ctx)
{
	struct rcc_ctx_attr resolved;
	const struct rcc_ctx_attr *attr = &resolved;
	static const struct rcc_ctx_attr defaults;
	int rc;

	rcci_error_clear();
	if (!ctx)
		return rcci_fail(-EINVAL, "rcc_ctx_open: ctx is NULL");
	rc = resolve_shm(in ? in : &defaults, &resolved);
	if (rc)
		return rc;
	if (attr->transport < RCC_TRANSPORT_AUTO || attr->transport > RCC_TRANSPORT_TCP)
		return rcci_fail(-EINVAL, "unknown transport %d", (int)attr->transport);
	if (attr->bringup < RCC_BRINGUP_CM || attr->bringup > RCC_BRINGUP_MANUAL)
		return rcci_fail(-EINVAL, "unknown bring-up %d", (int)attr->bringup);
	if (attr->port < 0 || attr->gid_index < RCC_GID_INDEX_ZERO)
		return rcci_fail(-EINVAL, "device port %d or GID index %d out of range", attr->port,
				 attr->gid_index);
	if (attr->device && strlen(attr->device) >= RCCI_DEVICE_NAME_MAX)
		return rcci_fail(-EINVAL, "device name of %zu bytes is too long",
				 strlen(attr->device));

	if (attr->transport != RCC_TRANSPORT_AUTO) {
		const struct rcc_transport_ops *ops = ops_for(attr->transport);
		if (!ops) {
			log_error("the %s transport is not part of this build",
				  rcc_transport_name(attr->transport));
			return rcci_fail(-ENOSYS, "the %s transport is not part of this build",
					 rcc_transport_name(attr->transport));
		}
		return open_with(ops, attr->transport, attr, ctx);
	}

	rc = -ENODEV;
#ifdef RCC_HAVE_VERBS
	rc = open_with(&rcci_verbs_ops, RCC_TRANSPORT_VERBS, attr, ctx);
	if (rc != -ENODEV)
		return rc;
#endif
	/* A named device means RDMA: running over tcp instead would hide the
	 * typo or the missing driver the caller needs to hear about. */
	if (attr->device && attr->device[0]) {
		log_error("transport auto: no usable RDMA device '%s' (%s)", attr->device,
			  rcc_strerror(rc));
		return rcci_fail(rc, "no usable RDMA device '%s'", attr->device);
	}
	log_info("transport auto: no usable RDMA device (%s), using the tcp transport",
		 rcc_strerror(rc));
	return open_with(&rcci_tcp_ops, RCC_TRANSPORT_TCP, attr, ctx);
}

int rcc_ctx_close(struct rcc_ctx *ctx)
{
	if (!ctx)
		return -EINVAL;
	int n = atomic_load(&ctx->children);
	if (n > 0) {
		log_warn("rcc_ctx_close: %d objects still open", n);
		return -EBUSY;
	}
	ctx->ops->ctx_close(ctx);
	pthread_mutex_destroy(&ctx->mem_lock);
	rcci_events_fini(&ctx->events);
	free(ctx);
	return 0;
}

enum rcc_transport rcc_ctx_transport(const struct rcc_ctx *ctx)
{
	return ctx ? ctx->transport : RCC_TRANSPORT_AUTO;
}

int rcc_device_list(struct rcc_device_info **devices, int *count)
{
	const struct rcc_transport_ops *ops = ops_for(RCC_TRANSPORT_VERBS);

	if (!devices || !count)
		return -EINVAL;
	return ops && ops->device_list ? ops->device_list(devices, count) : -ENOSYS;
}

void rcc_device_list_free(struct rcc_device_info *devices, int count)
{
	const struct rcc_transport_ops *ops = ops_for(RCC_TRANSPORT_VERBS);

	if (ops && ops->device_list_free)
		ops->device_list_free(devices, count);
}
