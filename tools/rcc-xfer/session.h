/* SPDX-License-Identifier: BSD-3-Clause */
/* The two sides of a transfer session and the authentication both run first. */
#ifndef XFER_SESSION_H
#define XFER_SESSION_H

#include "auth.h"
#include "chan.h"
#include "cli.h"

/* Run the sender: connect, authenticate, send o->files. Returns the exit status. */
int xfer_send(const struct xfer_opts *o);
/* Run the receiver until stopped (or one connection with --once). Exit status. */
int xfer_recv(const struct xfer_opts *o);

/*
 * The handshake of auth.h from each side. 0, or an exit status (XEXIT_*)
 * after printing why. The receiver fills *id with the sender's id.
 */
int auth_as_sender(struct chan *c, const struct xfer_key *k, const char *id, int timeout_ms);
int auth_as_receiver(struct chan *c, const struct xfer_key *k, int timeout_ms,
		     char id[XFER_ID_MAX + 1]);

#endif
