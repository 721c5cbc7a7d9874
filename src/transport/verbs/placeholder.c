/* Placeholder until the verbs transport lands: reports that no device is usable. */
#include <errno.h>

#include "transport/transport.h"

static int placeholder_open(struct rcc_ctx *ctx)
{
	(void)ctx;
	return -ENODEV;
}

const struct rcc_transport_ops rcci_verbs_ops = {
	.name = "verbs",
	.ctx_size = sizeof(struct rcc_ctx),
	.ctx_open = placeholder_open,
};

int rcci_verbs_device_list(struct rcc_device_info **devices, int *count)
{
	(void)devices;
	(void)count;
	return -ENODEV;
}

void rcci_verbs_device_list_free(struct rcc_device_info *devices, int count)
{
	(void)devices;
	(void)count;
}
