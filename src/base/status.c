/* SPDX-License-Identifier: BSD-3-Clause */
/* Text for statuses, states and opcodes. */
#include <errno.h>
#include <string.h>

#include "rcc/rcc.h"

#define STR_(x) #x
#define STR(x) STR_(x)

const char *rcc_version(void)
{
	return STR(RCC_VERSION_MAJOR) "." STR(RCC_VERSION_MINOR) "." STR(RCC_VERSION_PATCH);
}

const char *rcc_strerror(int status)
{
	static _Thread_local char buf[96];
	int e = status < 0 ? -status : status;

	switch (e) {
	case 0:
		return "success";
	case ECONNABORTED:
		return "connection rejected by the peer";
	case ECONNREFUSED:
		return "connection refused (nothing listening there)";
	case ECONNRESET:
		return "connection reset (the peer closed it)";
	case EHOSTUNREACH:
	case ENETUNREACH:
		return "host unreachable";
	case ENOTCONN:
		return "endpoint is not connected";
	case ETIMEDOUT:
		return "timed out";
	case ENODEV:
		return "no RDMA device";
	case ENOSYS:
		return "not supported by this build";
	case EPROTO:
		return "protocol error (malformed or unexpected message from the peer)";
	case ENOBUFS:
		return "no buffer available";
	case ENOENT:
		return "unknown host or address"; /* the only ENOENT rcc returns */
	default:
		break;
	}
	/* GNU strerror_r may return a static string instead of filling buf. */
	char tmp[80];
	const char *s = strerror_r(e, tmp, sizeof(tmp));
	strncpy(buf, s ? s : "unknown error", sizeof(buf) - 1);
	buf[sizeof(buf) - 1] = '\0';
	return buf;
}

const char *rcc_wc_status_str(enum rcc_wc_status status)
{
	switch (status) {
	case RCC_WC_SUCCESS:
		return "success";
	case RCC_WC_LOC_LEN_ERR:
		return "local length error";
	case RCC_WC_LOC_QP_OP_ERR:
		return "local QP operation error";
	case RCC_WC_LOC_PROT_ERR:
		return "local protection error";
	case RCC_WC_WR_FLUSH_ERR:
		return "work request flushed";
	case RCC_WC_BAD_RESP_ERR:
		return "bad response";
	case RCC_WC_LOC_ACCESS_ERR:
		return "local access error";
	case RCC_WC_REM_INV_REQ_ERR:
		return "remote invalid request";
	case RCC_WC_REM_ACCESS_ERR:
		return "remote access error";
	case RCC_WC_REM_OP_ERR:
		return "remote operation error";
	case RCC_WC_RETRY_EXC_ERR:
		return "transport retry counter exceeded";
	case RCC_WC_RNR_RETRY_EXC_ERR:
		return "RNR retry counter exceeded";
	case RCC_WC_REM_ABORT_ERR:
		return "remote aborted";
	case RCC_WC_FATAL_ERR:
		return "fatal error";
	case RCC_WC_GENERAL_ERR:
		return "general error";
	}
	return "unknown status";
}

const char *rcc_wc_opcode_str(enum rcc_wc_opcode opcode)
{
	switch (opcode) {
	case RCC_WC_SEND:
		return "SEND";
	case RCC_WC_WRITE:
		return "WRITE";
	case RCC_WC_READ:
		return "READ";
	case RCC_WC_CAS:
		return "CAS";
	case RCC_WC_FADD:
		return "FADD";
	case RCC_WC_RECV:
		return "RECV";
	case RCC_WC_RECV_WRITE_IMM:
		return "RECV_WRITE_IMM";
	}
	return "UNKNOWN";
}

const char *rcc_ep_state_str(enum rcc_ep_state s)
{
	switch (s) {
	case RCC_EP_CONNECTED:
		return "connected";
	case RCC_EP_ERROR:
		return "error";
	case RCC_EP_DISCONNECTED:
		return "disconnected";
	case RCC_EP_CONNECTING:
		return "connecting";
	}
	return "unknown";
}

const char *rcc_transport_name(enum rcc_transport t)
{
	switch (t) {
	case RCC_TRANSPORT_AUTO:
		return "auto";
	case RCC_TRANSPORT_VERBS:
		return "verbs";
	case RCC_TRANSPORT_TCP:
		return "tcp";
	}
	return "unknown";
}

int rcc_transport_parse(const char *name, enum rcc_transport *t)
{
	static const enum rcc_transport all[] = { RCC_TRANSPORT_AUTO, RCC_TRANSPORT_VERBS,
						  RCC_TRANSPORT_TCP };
	if (!name || !t)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		if (!strcmp(name, rcc_transport_name(all[i]))) {
			*t = all[i];
			return 0;
		}
	}
	return -EINVAL;
}
