/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One connection on the receiving side: authenticate the sender, then take
 * files one after another. For each: check the offer and prepare the part
 * file (store.c), advertise a window of registered chunks, persist every
 * chunk that arrives by WRITE_WITH_IMM in file order and give its slot back
 * with a CREDIT, and on DONE verify, put the file in place and answer with
 * a receipt.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exitcode.h"
#include "output.h"
#include "receiver.h"
#include "stats.h"
#include "store.h"
#include "window.h"

enum {
	NEXT_FILE = 0,
	END_SESSION,
	KEEP_GOING
};

struct session {
	struct receiver *r;
	struct chan *ch;
	char id[XFER_ID_MAX + 1];
	char peer[128];
	char jid[200], jpeer[300];
	int status;
};

/* One file being received. */
struct incoming {
	struct store st;
	struct window win;
	uint8_t *granted; /* slot may be written by the sender */
	uint32_t seq;     /* next chunk expected */
	bool force;
	char jname[600];
	uint64_t t0_ns;
};

static void note(struct session *ss, int status)
{
	if (!ss->status)
		ss->status = status;
}

static int tick_chan(void *arg) { return chan_tick(arg); }

static void send_error(struct session *ss, enum xfer_err code, const char *text)
{
	struct xmsg m;

	xmsg_error(&m, code, "%s", text);
	chan_send(ss->ch, &m);
}

static void report_failure(struct session *ss, const char *name, const char *jname, uint32_t code,
			   const char *text)
{
	char jt[900];

	out_error("%s (%s): %s: %s", ss->id, ss->peer, name, text);
	out_json("{\"event\":\"failed\",\"peer\":%s,\"id\":%s,\"name\":%s,\"code\":\"%s\","
		 "\"error\":%s}",
		 ss->jpeer, ss->jid, jname, xfer_err_token(code), json_str(text, jt, sizeof(jt)));
	note(ss, exit_for_peer_error(code));
}

static void report_success(struct session *ss, struct incoming *in, const uint8_t sha[32],
			   const uint8_t receipt[32])
{
	double secs = (double)(mono_ns() - in->t0_ns) / 1e9;
	uint64_t moved = in->st.size - in->st.resumed;
	char shahex[65], rhex[65], sz[32], rate[32], at[48] = "";

	hex_encode(sha, 32, shahex);
	hex_encode(receipt, 32, rhex);
	fmt_bytes(in->st.size, sz, sizeof(sz));
	fmt_rate(secs > 0 ? (double)moved / secs : 0, rate, sizeof(rate));
	if (in->st.resumed) {
		char b[32];
		snprintf(at, sizeof(at), ", resumed at %s",
			 fmt_bytes(in->st.resumed, b, sizeof(b)));
	}
	out_info("received %s (%s) from %s (%s) in %.2f s (%s)%s, sha256 %s, receipt %s",
		 in->st.name, sz, ss->id, ss->peer, secs, rate, at, shahex, rhex);
	out_json("{\"event\":\"received\",\"peer\":%s,\"id\":%s,\"name\":%s,\"size\":%llu,"
		 "\"resumed_from\":%llu,\"seconds\":%.6f,\"rate_bps\":%.0f,\"sha256\":\"%s\","
		 "\"receipt\":\"%s\",\"max_rss_kib\":%ld}",
		 ss->jpeer, ss->jid, in->jname, (unsigned long long)in->st.size,
		 (unsigned long long)in->st.resumed, secs, secs > 0 ? (double)moved / secs : 0,
		 shahex, rhex, peak_rss_kib());
}

/* The connection broke mid-file: keep what is verified and say so. */
static int broken(struct session *ss, struct incoming *in, int rc)
{
	char text[400], done[32], total[32];

	if (rc == -EINTR)
		send_error(ss, XE_INTERRUPTED, "the receiver is shutting down");
	else if (rc == -EBADMSG)
		send_error(ss, XE_PROTO, chan_why(ss->ch));
	/* Closing discards unsent work on verbs: let the reason reach the peer. */
	if (rc == -EINTR || rc == -EBADMSG)
		chan_drain(ss->ch, 1000);
	fmt_bytes(in->st.written, done, sizeof(done));
	fmt_bytes(in->st.size, total, sizeof(total));
	store_abort(&in->st, true);
	snprintf(text, sizeof(text), "%s; stopped at %s of %s%s", chan_why(ss->ch), done, total,
		 in->st.written ? ", verified part kept for resume" : "");
	out_error("%s (%s): %s: %s", ss->id, ss->peer, in->st.name, text);
	char jt[900];
	out_json("{\"event\":\"failed\",\"peer\":%s,\"id\":%s,\"name\":%s,\"code\":\"%s\","
		 "\"error\":%s}",
		 ss->jpeer, ss->jid, in->jname,
		 rc == -EINTR     ? "interrupted" :
		 rc == -EBADMSG   ? "protocol" :
		 rc == -ETIMEDOUT ? "timeout" :
				    "connection",
		 json_str(text, jt, sizeof(jt)));
	note(ss, exit_for_chan_error(rc));
	return END_SESSION;
}

/* After we gave up on a file mid-way: ignore the chunks still arriving until
 * the sender ends the file too (its ERROR, or a DONE already on its way). */
static int drain_file(struct session *ss)
{
	struct chan_ev ev;
	int rc;

	for (;;) {
		rc = chan_next(ss->ch, ss->r->o->timeout_ms, -1, &ev);
		if (rc) {
			out_error("%s (%s): %s", ss->id, ss->peer, chan_why(ss->ch));
			note(ss, exit_for_chan_error(rc));
			return END_SESSION;
		}
		if (ev.type == CEV_CHUNK)
			continue;
		if (ev.type == CEV_MSG && (ev.msg.type == XM_ERROR || ev.msg.type == XM_DONE))
			return NEXT_FILE;
		send_error(ss, XE_PROTO, "unexpected message after an aborted file");
		out_error("%s (%s): unexpected %s after an aborted file; closing", ss->id, ss->peer,
			  xmsg_type_name(ev.msg.type));
		note(ss, XEXIT_PROTO);
		return END_SESSION;
	}
}

static int protocol_violation(struct session *ss, struct incoming *in, const char *what)
{
	struct xmsg m;

	xmsg_error(&m, XE_PROTO, "%s", what);
	chan_send(ss->ch, &m);
	chan_drain(ss->ch, 1000);
	store_abort(&in->st, true);
	report_failure(ss, in->st.name, in->jname, XE_PROTO, what);
	return END_SESSION;
}

static int on_chunk(struct session *ss, struct incoming *in, const struct chan_ev *ev)
{
	uint32_t slot = imm_slot(ev->imm);
	uint64_t left = in->st.size - in->st.written;
	uint32_t want = left < in->win.chunk ? (uint32_t)left : in->win.chunk;
	struct store_err e;
	struct xmsg m;
	int rc;

	/* RC delivers in order, so chunks arrive in file order: anything else
	 * is a broken or hostile sender. */
	if (slot >= in->win.count || !in->granted[slot] ||
	    imm_seq(ev->imm) != (in->seq & IMM_SEQ_MASK) || !left || ev->len != want)
		return protocol_violation(ss, in,
					  "chunk out of order, out of bounds or of the "
					  "wrong length");
	in->granted[slot] = 0;
	rc = store_write(&in->st, window_slot(&in->win, slot), ev->len, &e);
	if (rc) {
		send_error(ss, e.code, e.text);
		store_abort(&in->st, true);
		report_failure(ss, in->st.name, in->jname, e.code, e.text);
		return drain_file(ss);
	}
	in->granted[slot] = 1;
	in->seq++;
	memset(&m, 0, sizeof(m));
	m.type = XM_CREDIT;
	m.u.credit.slot = slot;
	m.u.credit.persisted = in->st.written;
	rc = chan_send(ss->ch, &m);
	/* A sender that already left may have said why: read on. */
	if (rc && rc != -ECONNRESET)
		return broken(ss, in, rc);
	return KEEP_GOING;
}

static int on_done(struct session *ss, struct incoming *in, const struct xmsg *m)
{
	uint8_t sha[32], receipt[32];
	struct store_err e;
	struct xmsg res;

	if (m->u.done.size != in->st.size || in->st.written != in->st.size)
		return protocol_violation(ss, in, "DONE before all data arrived");
	if (store_finish(&in->st, m->u.done.sha, in->force, &e)) {
		send_error(ss, e.code, e.text);
		report_failure(ss, in->st.name, in->jname, e.code, e.text);
		return NEXT_FILE;
	}
	memcpy(sha, m->u.done.sha, 32);
	if (auth_receipt(&ss->r->key, ss->id, sha, in->st.size, in->st.name, receipt)) {
		send_error(ss, XE_INTERNAL, "cannot compute the receipt");
		return END_SESSION;
	}
	memset(&res, 0, sizeof(res));
	res.type = XM_RESULT;
	memcpy(res.u.result.sha, sha, 32);
	memcpy(res.u.result.receipt, receipt, 32);
	snprintf(res.u.result.name, sizeof(res.u.result.name), "%s", in->st.name);
	report_success(ss, in, sha, receipt);
	if (chan_send(ss->ch, &res)) {
		out_error("%s (%s): %s stored, but the receipt could not be sent: %s", ss->id,
			  ss->peer, in->st.name, chan_why(ss->ch));
		note(ss, XEXIT_CONN);
		return END_SESSION;
	}
	return NEXT_FILE;
}

static int on_sender_error(struct session *ss, struct incoming *in, const struct xmsg *m)
{
	uint32_t code = m->u.error.code;
	bool keep = code != XE_SOURCE_CHANGED && code != XE_RESUME_MISMATCH;
	char text[300];

	store_abort(&in->st, keep);
	snprintf(text, sizeof(text), "the sender abandoned the file: %s%s", m->u.error.text,
		 keep && in->st.written ? " (verified part kept for resume)" : "");
	if (code == XE_RESUME_MISMATCH) {
		out_info("%s (%s): %s: partial copy does not match the source; starting over",
			 ss->id, ss->peer, in->st.name);
		return NEXT_FILE;
	}
	report_failure(ss, in->st.name, in->jname, code, text);
	return NEXT_FILE;
}

static int data_loop(struct session *ss, struct incoming *in)
{
	struct chan_ev ev;
	int rc;

	for (;;) {
		rc = chan_next(ss->ch, ss->r->o->timeout_ms, -1, &ev);
		if (rc)
			return broken(ss, in, rc);
		if (ev.type == CEV_CHUNK) {
			rc = on_chunk(ss, in, &ev);
			if (rc != KEEP_GOING)
				return rc;
			continue;
		}
		if (ev.type != CEV_MSG)
			return protocol_violation(ss, in, "unexpected completion");
		if (ev.msg.type == XM_DONE)
			return on_done(ss, in, &ev.msg);
		if (ev.msg.type == XM_ERROR)
			return on_sender_error(ss, in, &ev.msg);
		return protocol_violation(ss, in, "unexpected message during the data phase");
	}
}

static int receive_file(struct session *ss, const struct xmsg *meta)
{
	struct receiver *r = ss->r;
	struct incoming in;
	struct store_err e;
	uint32_t chunk, count;
	struct xmsg acc;
	int rc;

	memset(&in, 0, sizeof(in));
	json_str(meta->u.meta.name, in.jname, sizeof(in.jname));
	in.force = meta->u.meta.flags & XFER_META_FORCE;
	in.t0_ns = mono_ns();
	rc = store_open(&in.st, r->dirfd, meta, &r->sopts, tick_chan, ss->ch, &e);
	if (rc) {
		send_error(ss, e.code, e.text);
		report_failure(ss, meta->u.meta.name, in.jname, e.code, e.text);
		return e.code == XE_INTERRUPTED ? END_SESSION : NEXT_FILE;
	}
	window_shape(in.st.size - in.st.written, r->chunk_size, r->o->window, &chunk, &count);
	rc = window_create(r->ctx, chunk, count, RCC_ACCESS_LOCAL_WRITE | RCC_ACCESS_REMOTE_WRITE,
			   &in.win);
	in.granted = calloc(count ? count : 1, 1);
	if (rc || !in.granted) {
		store_abort(&in.st, true);
		send_error(ss, XE_INTERNAL, "the receiver could not register memory");
		report_failure(ss, meta->u.meta.name, in.jname, XE_INTERNAL,
			       "cannot register the chunk window");
		rc = NEXT_FILE;
		goto out;
	}
	memset(in.granted, 1, count);
	memset(&acc, 0, sizeof(acc));
	acc.type = XM_ACCEPT;
	acc.u.accept.offset = in.st.written;
	store_digest(&in.st, acc.u.accept.prefix_sha);
	acc.u.accept.chunk_size = chunk;
	acc.u.accept.chunk_count = count;
	if (count)
		acc.u.accept.window = rcc_mr_remote(in.win.mr);
	rc = chan_send(ss->ch, &acc);
	rc = rc ? broken(ss, &in, rc) : data_loop(ss, &in);
out:
	free(in.granted);
	window_destroy(&in.win);
	return rc;
}

/* An authenticated connection takes a served slot, if one is free. */
static bool take_served_slot(struct receiver *r)
{
	bool ok;

	pthread_mutex_lock(&r->lock);
	ok = r->served < r->o->max_conns;
	if (ok)
		r->served++;
	pthread_mutex_unlock(&r->lock);
	return ok;
}

static void give_served_slot(struct receiver *r)
{
	pthread_mutex_lock(&r->lock);
	r->served--;
	pthread_mutex_unlock(&r->lock);
}

int serve_connection(struct receiver *r, struct rcc_conn_req *req,
		     const uint8_t token[XFER_TOKEN_LEN], struct conn_ctl *ctl)
{
	struct chan_opts co = { .cq_mode = r->o->cq_mode, .write_depth = 0 };
	struct session ss;
	struct chan_ev ev;
	char err[256], peer[128];
	int rc;

	memset(&ss, 0, sizeof(ss));
	ss.r = r;
	snprintf(peer, sizeof(peer), "%s", rcc_conn_req_peer(req));
	rc = chan_accept(r->ctx, req, token, &co, &ss.ch, err, sizeof(err));
	if (rc) {
		out_error("%s: %s", peer, err);
		return XEXIT_CONN;
	}
	snprintf(ss.peer, sizeof(ss.peer), "%s", chan_peer(ss.ch));
	json_str(ss.peer, ss.jpeer, sizeof(ss.jpeer));
	/* Before it has proved the key, the peer has a short deadline and may be
	 * dropped to make room for others (receiver.c); it holds no served slot. */
	if (ctl)
		chan_set_abort(ss.ch, &ctl->evict);
	rc = auth_as_receiver(ss.ch, &r->key, r->o->auth_timeout_ms, ss.id);
	if (rc) {
		json_str("", ss.jid, sizeof(ss.jid));
		out_json("{\"event\":\"failed\",\"peer\":%s,\"id\":null,\"name\":null,\"code\":"
			 "\"%s\",\"error\":\"authentication failed\"}",
			 ss.jpeer, rc == XEXIT_AUTH ? "auth" : "protocol");
		chan_close(ss.ch);
		return rc;
	}
	json_str(ss.id, ss.jid, sizeof(ss.jid));
	if (ctl) {
		chan_set_abort(ss.ch, NULL);
		atomic_store(&ctl->authenticated, true);
		if (!take_served_slot(r)) {
			char why[96];
			snprintf(why, sizeof(why), "already serving %d connections (--max-conns)",
				 r->o->max_conns);
			out_error("turned away %s (%s): %s", ss.id, ss.peer, why);
			send_error(&ss, XE_BUSY, why);
			chan_drain(ss.ch, 1000);
			chan_close(ss.ch);
			return XEXIT_CONN;
		}
	}
	out_json("{\"event\":\"connected\",\"peer\":%s,\"id\":%s}", ss.jpeer, ss.jid);
	for (;;) {
		rc = chan_next(ss.ch, r->o->timeout_ms, -1, &ev);
		if (rc) {
			out_error("%s (%s): %s", ss.id, ss.peer, chan_why(ss.ch));
			note(&ss, exit_for_chan_error(rc));
			break;
		}
		if (ev.type == CEV_MSG && ev.msg.type == XM_META) {
			if (receive_file(&ss, &ev.msg) == END_SESSION)
				break;
			continue;
		}
		if (ev.type == CEV_MSG && ev.msg.type == XM_BYE)
			break;
		if (ev.type == CEV_MSG && ev.msg.type == XM_ERROR) {
			out_error("%s (%s): the sender reports: %s", ss.id, ss.peer,
				  ev.msg.u.error.text);
			continue;
		}
		out_error("%s (%s): unexpected %s; closing", ss.id, ss.peer,
			  ev.type == CEV_MSG ? xmsg_type_name(ev.msg.type) : "RDMA write");
		send_error(&ss, XE_PROTO, "unexpected message");
		chan_drain(ss.ch, 1000);
		note(&ss, XEXIT_PROTO);
		break;
	}
	chan_close(ss.ch);
	if (ctl)
		give_served_slot(r);
	return ss.status;
}
