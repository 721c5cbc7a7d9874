/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A verbs client that never confirms (tests only; needs librdmacm): it sends
 * an rdma_cm CONNECT_REQUEST with no private data, waits for the server's REP
 * and never sends the RTU (no QP, no rdma_establish()). A server must not
 * wait on it.
 */
#ifndef RCC_TEST_CM_SILENT_H
#define RCC_TEST_CM_SILENT_H

struct cm_silent;

/* Connect to host:port until the REP is in (each step bounded, 5 s). 0 and
 * *out, or -1 with the reason in why. The connection is half-open until
 * cm_silent_close(). */
int cm_silent_open(const char *host, int port, struct cm_silent **out, char *why, size_t whylen);
void cm_silent_close(struct cm_silent *s);

#endif
