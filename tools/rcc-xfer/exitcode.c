/* SPDX-License-Identifier: BSD-3-Clause */
#include "exitcode.h"

#include <errno.h>

#include "proto.h"

int exit_for_peer_error(uint32_t code)
{
	switch (code) {
	case XE_AUTH:
		return XEXIT_AUTH;
	case XE_BADNAME:
	case XE_EXISTS:
	case XE_BUSY:
	case XE_NOSPACE:
	case XE_TOO_LARGE:
	case XE_NOTSUPP:
		return XEXIT_REFUSED;
	case XE_INTEGRITY:
	case XE_SOURCE_CHANGED:
	case XE_RESUME_MISMATCH:
		return XEXIT_INTEGRITY;
	case XE_PROTO:
	case XE_VERSION:
		return XEXIT_PROTO;
	case XE_TIMEOUT:
	case XE_INTERRUPTED:
		return XEXIT_CONN;
	default:
		return XEXIT_LOCAL;
	}
}

int exit_for_chan_error(int rc)
{
	switch (rc) {
	case -EINTR:
		return XEXIT_INTERRUPTED;
	case -EBADMSG:
		return XEXIT_PROTO;
	case 0:
		return XEXIT_OK;
	default:
		return XEXIT_CONN;
	}
}

const char *xfer_err_token(uint32_t code)
{
	switch (code) {
	case XE_NONE:
		return "none";
	case XE_AUTH:
		return "auth";
	case XE_PROTO:
		return "protocol";
	case XE_VERSION:
		return "version";
	case XE_BADNAME:
		return "bad-name";
	case XE_EXISTS:
		return "exists";
	case XE_BUSY:
		return "busy";
	case XE_NOSPACE:
		return "no-space";
	case XE_IO:
		return "io";
	case XE_INTEGRITY:
		return "integrity";
	case XE_SOURCE_CHANGED:
		return "source-changed";
	case XE_RESUME_MISMATCH:
		return "resume-mismatch";
	case XE_INTERRUPTED:
		return "interrupted";
	case XE_TOO_LARGE:
		return "too-large";
	case XE_TIMEOUT:
		return "timeout";
	case XE_INTERNAL:
		return "internal";
	case XE_NOTSUPP:
		return "not-supported";
	}
	return "unknown";
}
