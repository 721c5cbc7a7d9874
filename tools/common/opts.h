/* SPDX-License-Identifier: BSD-3-Clause */
/* Option values shared by the programs: sizes, transports, modes. */
#ifndef RCC_TOOLS_OPTS_H
#define RCC_TOOLS_OPTS_H

#include <stdbool.h>
#include <stdint.h>

#include "rcc/rcc.h"
#include "rcc/session.h"

/* "4096", "4K"/"4k"/"4KiB", "1M", "2G" (binary multiples). 0 or -EINVAL. */
int parse_size(const char *s, uint64_t *out);
/* s is one or more decimal digits and nothing else. */
bool all_digits(const char *s);
/* A decimal integer in [min, max]. 0 or -EINVAL. */
int parse_int(const char *s, long min, long max, long *out);
/*
 * A duration: a decimal number with an optional fraction and a unit, "500ms",
 * "5s", "1.5s", "2m", "1h". A bare number ("5", "0.2") is seconds, the unit of
 * perftest's -D and of most tools' timeouts; *bare says it had no unit (NULL:
 * not wanted). Stored in milliseconds: 0 or -EINVAL for anything else (signs,
 * exponents, a non-zero value below 1 ms, more than a year, an unknown unit).
 */
int parse_duration(const char *s, uint64_t *ms, bool *bare);
/* "poll" | "wait" | "fd" */
int parse_cq_mode(const char *s, enum rcc_cq_mode *m);
const char *cq_mode_name(enum rcc_cq_mode m);
/* "rc" | "uc" | "ud" in either case (perftest's -c writes RC, UC, UD) */
int parse_qp_type(const char *s, enum rcc_qp_type *t);
/* "RC" | "UC" | "UD" */
const char *qp_type_name(enum rcc_qp_type t);
/* "per-ep" | "shared" */
int parse_thread_mode(const char *s, enum rcc_thread_mode *m);
const char *thread_mode_name(enum rcc_thread_mode m);
/* "cm" | "manual" */
int parse_bringup(const char *s, enum rcc_bringup *b);

/*
 * The transport options every program takes, stored into a context's
 * attributes; a bad value is a usage error (exit 2) naming the option.
 * A GID index of 0 is stored as RCC_GID_INDEX_ZERO (0 means automatic).
 */
void opt_transport(const char *prog, const char *arg, struct rcc_ctx_attr *a);
void opt_ib_port(const char *prog, const char *arg, struct rcc_ctx_attr *a);
void opt_gid_index(const char *prog, const char *arg, struct rcc_ctx_attr *a);
void opt_bringup(const char *prog, const char *arg, struct rcc_ctx_attr *a);

/* "host:port" for rcc's address parser: a bare IPv6 literal gets brackets,
 * an already bracketed one does not get them twice. */
void join_host_port(char *buf, size_t len, const char *host, int port);

/*
 * A peer named on the command line: "host", "host:port", "[v6addr]",
 * "[v6addr]:port" or a bare IPv6 literal ("::1", no port). The host goes to
 * host (brackets removed); *port is set only when the argument has one.
 * 0, or -EINVAL for an empty host, a bad or out-of-range port (1-65535), an
 * unclosed bracket, a host longer than hostlen - 1, or a host with a
 * control character (bytes 0x00-0x1f, 0x7f: no host has them, and a peer's
 * text with them must never reach a terminal).
 */
int split_host_port(const char *arg, char *host, size_t hostlen, int *port);

/*
 * Why a set-up call just failed with status rc, for a tool's message: the
 * library's own words (rcc_last_error(), which already name the condition)
 * or, when it said no more, the status's text. Call it right after the
 * failing call, on the same thread; the text is valid until that thread's
 * next set-up call.
 */
const char *explain_status(int rc);

/* Print "prog: message" to stderr and exit with status 2 (usage error). */
void usage_error(const char *prog, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

#endif
