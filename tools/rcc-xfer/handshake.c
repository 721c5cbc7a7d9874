/* SPDX-License-Identifier: BSD-3-Clause */
/* Mutual authentication (see auth.h): the sender's and the receiver's halves. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "exitcode.h"
#include "output.h"
#include "session.h"

/* Next control message, with keepalives and stale credits already skipped. */
static int next_msg(struct chan *c, int timeout_ms, struct xmsg *m)
{
	struct chan_ev ev;
	int rc = chan_next(c, timeout_ms, -1, &ev);

	if (rc)
		return rc;
	if (ev.type != CEV_MSG)
		return -EBADMSG;
	*m = ev.msg;
	return 0;
}

static int chan_failure(struct chan *c, int rc, const char *when)
{
	out_error("%s: %s", when,
		  rc == -EBADMSG && !*chan_why(c) ? "unexpected data" : chan_why(c));
	return exit_for_chan_error(rc);
}

int auth_as_sender(struct chan *c, const struct xfer_key *k, const char *id, int timeout_ms)
{
	struct auth_transcript t;
	uint8_t want[XFER_MAC_LEN], skey[XFER_MAC_LEN];
	struct xmsg m;
	int rc;

	memset(&t, 0, sizeof(t));
	chan_tokens(c, t.token_s, t.token_r);
	snprintf(t.id, sizeof(t.id), "%s", id);
	if (random_bytes(t.nonce_s, XFER_NONCE_LEN)) {
		out_error("no random numbers available");
		return XEXIT_LOCAL;
	}
	memset(&m, 0, sizeof(m));
	m.type = XM_HELLO;
	m.u.hello.version = XFER_PROTO_VERSION;
	memcpy(m.u.hello.nonce, t.nonce_s, XFER_NONCE_LEN);
	snprintf(m.u.hello.id, sizeof(m.u.hello.id), "%s", id);
	rc = chan_send(c, &m);
	if (!rc)
		rc = next_msg(c, timeout_ms, &m);
	if (rc)
		return chan_failure(c, rc, "authentication");
	if (m.type == XM_ERROR) {
		out_error("the receiver refused the connection: %s", m.u.error.text);
		return exit_for_peer_error(m.u.error.code);
	}
	if (m.type != XM_CHALLENGE) {
		out_error("authentication: expected CHALLENGE, got %s", xmsg_type_name(m.type));
		return XEXIT_PROTO;
	}
	memcpy(t.nonce_r, m.u.challenge.nonce, XFER_NONCE_LEN);
	if (auth_proof(k, AUTH_RECEIVER, &t, want)) {
		out_error("cannot compute HMAC-SHA256");
		return XEXIT_LOCAL;
	}
	if (!auth_equal(want, m.u.challenge.mac, XFER_MAC_LEN)) {
		xmsg_error(&m, XE_AUTH,
			   "authentication failed: the sender could not verify "
			   "the receiver's proof (the keys differ)");
		chan_send(c, &m);
		chan_drain(c, 2000);
		out_error("authentication failed: the receiver at %s does not hold the same key; "
			  "nothing was sent",
			  chan_peer(c));
		return XEXIT_AUTH;
	}
	memset(&m, 0, sizeof(m));
	m.type = XM_AUTH;
	if (auth_proof(k, AUTH_SENDER, &t, m.u.auth.mac) || auth_session_key(k, &t, skey)) {
		out_error("cannot compute HMAC-SHA256");
		return XEXIT_LOCAL;
	}
	rc = chan_send(c, &m);
	chan_seal(c, AUTH_SENDER, skey);
	memset(skey, 0, sizeof(skey));
	if (!rc)
		rc = next_msg(c, timeout_ms, &m);
	if (rc)
		return chan_failure(c, rc, "authentication");
	if (m.type == XM_ERROR) {
		out_error("authentication failed: the receiver refused our key (%s)",
			  m.u.error.text);
		return exit_for_peer_error(m.u.error.code);
	}
	if (m.type != XM_AUTH_OK) {
		out_error("authentication: expected AUTH_OK, got %s", xmsg_type_name(m.type));
		return XEXIT_PROTO;
	}
	return 0;
}

static void refuse(struct chan *c, enum xfer_err code, const char *text)
{
	struct xmsg m;

	xmsg_error(&m, code, "%s", text);
	if (chan_send(c, &m) == 0)
		chan_drain(c, 2000);
}

int auth_as_receiver(struct chan *c, const struct xfer_key *k, int timeout_ms,
		     char id[XFER_ID_MAX + 1])
{
	struct auth_transcript t;
	uint8_t want[XFER_MAC_LEN], skey[XFER_MAC_LEN];
	struct xmsg m;
	int rc;

	memset(&t, 0, sizeof(t));
	chan_tokens(c, t.token_s, t.token_r);
	rc = next_msg(c, timeout_ms, &m);
	if (rc)
		return chan_failure(c, rc, chan_peer(c));
	if (m.type != XM_HELLO) {
		out_error("%s: expected HELLO, got %s; closing", chan_peer(c),
			  xmsg_type_name(m.type));
		refuse(c, XE_PROTO, "expected HELLO");
		return XEXIT_PROTO;
	}
	if (m.u.hello.version != XFER_PROTO_VERSION) {
		out_error("%s: protocol version %u not supported (this is %d)", chan_peer(c),
			  m.u.hello.version, XFER_PROTO_VERSION);
		refuse(c, XE_VERSION, "protocol version not supported");
		return XEXIT_PROTO;
	}
	memcpy(t.nonce_s, m.u.hello.nonce, XFER_NONCE_LEN);
	snprintf(t.id, sizeof(t.id), "%s", m.u.hello.id);
	memset(&m, 0, sizeof(m));
	m.type = XM_CHALLENGE;
	if (random_bytes(t.nonce_r, XFER_NONCE_LEN) ||
	    auth_proof(k, AUTH_RECEIVER, &t, m.u.challenge.mac)) {
		out_error("cannot compute HMAC-SHA256");
		return XEXIT_LOCAL;
	}
	memcpy(m.u.challenge.nonce, t.nonce_r, XFER_NONCE_LEN);
	rc = chan_send(c, &m);
	if (!rc)
		rc = next_msg(c, timeout_ms, &m);
	if (rc)
		return chan_failure(c, rc, chan_peer(c));
	if (m.type == XM_ERROR) {
		out_error("%s (%s): authentication failed: the sender does not accept our key "
			  "(%s)",
			  chan_peer(c), t.id, m.u.error.text);
		return exit_for_peer_error(m.u.error.code);
	}
	if (m.type != XM_AUTH) {
		out_error("%s: expected AUTH, got %s; closing", chan_peer(c),
			  xmsg_type_name(m.type));
		refuse(c, XE_PROTO, "expected AUTH");
		return XEXIT_PROTO;
	}
	if (auth_proof(k, AUTH_SENDER, &t, want) || auth_session_key(k, &t, skey)) {
		out_error("cannot compute HMAC-SHA256");
		return XEXIT_LOCAL;
	}
	if (!auth_equal(want, m.u.auth.mac, XFER_MAC_LEN)) {
		memset(skey, 0, sizeof(skey));
		out_error("%s (%s): authentication failed: wrong key; connection closed, "
			  "nothing exposed",
			  chan_peer(c), t.id);
		refuse(c, XE_AUTH, "authentication failed: the receiver does not accept this key");
		return XEXIT_AUTH;
	}
	chan_seal(c, AUTH_RECEIVER, skey);
	memset(skey, 0, sizeof(skey));
	memset(&m, 0, sizeof(m));
	m.type = XM_AUTH_OK;
	rc = chan_send(c, &m);
	if (rc)
		return chan_failure(c, rc, chan_peer(c));
	snprintf(id, XFER_ID_MAX + 1, "%s", t.id);
	return 0;
}
