/* SPDX-License-Identifier: BSD-3-Clause */
#include "opts.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mult = 1;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	if (*end) {
		switch (*end) {
		case 'k':
		case 'K':
			mult = 1ull << 10;
			break;
		case 'm':
		case 'M':
			mult = 1ull << 20;
			break;
		case 'g':
		case 'G':
			mult = 1ull << 30;
			break;
		default:
			return -EINVAL;
		}
		end++;
		if (*end && strcasecmp(end, "iB") && strcasecmp(end, "B"))
			return -EINVAL;
	}
	if (v > UINT64_MAX / mult)
		return -EINVAL;
	*out = v * mult;
	return 0;
}

bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

int parse_int(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int parse_duration(const char *s, uint64_t *ms, bool *bare)
{
	static const struct {
		const char *name;
		uint64_t ms;
	} units[] = { { "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 } };
	const uint64_t max_ms = 366ull * 24 * 3600000;
	uint64_t whole = 0, frac = 0, frac_div = 1, unit = 1000;
	const char *p = s;
	bool digits = false;

	if (!s)
		return -EINVAL;
	/* By hand, not strtod: no signs, exponents, hex, "inf" or locale commas. */
	for (; *p >= '0' && *p <= '9'; p++, digits = true) {
		whole = whole * 10 + (uint64_t)(*p - '0');
		if (whole > max_ms)
			return -EINVAL;
	}
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, digits = true) {
			if (frac_div < 1000000000ull) { /* finer digits cannot reach 1 ms */
				frac = frac * 10 + (uint64_t)(*p - '0');
				frac_div *= 10;
			}
		}
	}
	if (!digits)
		return -EINVAL;
	if (*p) {
		size_t i;
		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (!strcmp(p, units[i].name))
				break;
		if (i == sizeof(units) / sizeof(units[0]))
			return -EINVAL;
		unit = units[i].ms;
	}
	if (whole > max_ms / unit)
		return -EINVAL;
	uint64_t v = whole * unit + (frac * unit + frac_div / 2) / frac_div;
	if (v > max_ms || (!v && (whole || frac)))
		return -EINVAL;
	*ms = v;
	if (bare)
		*bare = !*p;
	return 0;
}

int parse_cq_mode(const char *s, enum rcc_cq_mode *m)
{
	if (!strcmp(s, "poll"))
		*m = RCC_CQ_POLL;
	else if (!strcmp(s, "wait"))
		*m = RCC_CQ_WAIT;
	else if (!strcmp(s, "fd"))
		*m = RCC_CQ_FD;
	else if (!strcmp(s, "hybrid"))
		*m = RCC_CQ_HYBRID;
	else
		return -EINVAL;
	return 0;
}

const char *cq_mode_name(enum rcc_cq_mode m)
{
	return m == RCC_CQ_POLL   ? "poll" :
	       m == RCC_CQ_WAIT   ? "wait" :
	       m == RCC_CQ_HYBRID ? "hybrid" :
				    "fd";
}

int parse_qp_type(const char *s, enum rcc_qp_type *t)
{
	if (!strcasecmp(s, "rc"))
		*t = RCC_QP_RC;
	else if (!strcasecmp(s, "uc"))
		*t = RCC_QP_UC;
	else if (!strcasecmp(s, "ud"))
		*t = RCC_QP_UD;
	else
		return -EINVAL;
	return 0;
}

const char *qp_type_name(enum rcc_qp_type t)
{
	return t == RCC_QP_UC ? "UC" : t == RCC_QP_UD ? "UD" : "RC";
}

int parse_thread_mode(const char *s, enum rcc_thread_mode *m)
{
	if (!strcmp(s, "per-ep"))
		*m = RCC_THREAD_PER_EP;
	else if (!strcmp(s, "shared"))
		*m = RCC_THREAD_SHARED_CQ;
	else
		return -EINVAL;
	return 0;
}

const char *thread_mode_name(enum rcc_thread_mode m)
{
	return m == RCC_THREAD_PER_EP ? "per-ep" : "shared";
}

int parse_bringup(const char *s, enum rcc_bringup *b)
{
	if (!strcmp(s, "cm"))
		*b = RCC_BRINGUP_CM;
	else if (!strcmp(s, "manual"))
		*b = RCC_BRINGUP_MANUAL;
	else
		return -EINVAL;
	return 0;
}

void opt_transport(const char *prog, const char *arg, struct rcc_ctx_attr *a)
{
	if (rcc_transport_parse(arg, &a->transport))
		usage_error(prog, "the transport must be auto, verbs or tcp, not '%s'", arg);
}

void opt_ib_port(const char *prog, const char *arg, struct rcc_ctx_attr *a)
{
	long v;
	if (parse_int(arg, 1, 255, &v))
		usage_error(prog, "the device port must be 1..255, not '%s'", arg);
	a->port = (int)v;
}

void opt_gid_index(const char *prog, const char *arg, struct rcc_ctx_attr *a)
{
	long v;
	if (parse_int(arg, 0, 1023, &v))
		usage_error(prog, "the GID index must be 0..1023, not '%s'", arg);
	a->gid_index = v ? (int)v : RCC_GID_INDEX_ZERO;
}

void opt_bringup(const char *prog, const char *arg, struct rcc_ctx_attr *a)
{
	if (parse_bringup(arg, &a->bringup))
		usage_error(prog, "the bring-up must be cm or manual, not '%s'", arg);
}

void usage_error(const char *prog, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help'.\n", prog);
	exit(2);
}

void join_host_port(char *buf, size_t len, const char *host, int port)
{
	bool bare_v6 = strchr(host, ':') && host[0] != '[';
	snprintf(buf, len, bare_v6 ? "[%s]:%d" : "%s:%d", host, port);
}

int split_host_port(const char *arg, char *host, size_t hostlen, int *port)
{
	const char *h = arg, *colon = NULL;
	size_t hl;
	long v;

	if (!arg || !*arg)
		return -EINVAL;
	if (arg[0] == '[') {
		const char *close = strchr(arg, ']');
		if (!close)
			return -EINVAL;
		h = arg + 1;
		hl = (size_t)(close - h);
		if (close[1] == ':')
			colon = close + 1;
		else if (close[1])
			return -EINVAL;
	} else {
		colon = strchr(arg, ':');
		if (colon && strchr(colon + 1, ':'))
			colon = NULL; /* a bare IPv6 literal: no port */
		hl = colon ? (size_t)(colon - arg) : strlen(arg);
	}
	if (!hl || hl >= hostlen)
		return -EINVAL;
	for (size_t i = 0; i < hl; i++)
		if ((unsigned char)h[i] < 0x20 || h[i] == 0x7f)
			return -EINVAL; /* no host name has controls: refuse, never print them */
	if (colon && parse_int(colon + 1, 1, 65535, &v))
		return -EINVAL;
	memcpy(host, h, hl);
	host[hl] = 0;
	if (colon)
		*port = (int)v;
	return 0;
}

const char *explain_status(int rc)
{
	const char *why = rcc_last_error();

	return why[0] ? why : rcc_strerror(rc);
}
