/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tcp transport's receive side (white box, socket and shared memory;
 * verbs has no staging buffer): small frames are read in batches through the
 * endpoint's staging buffer, a large payload straight into its destination.
 * A run of large messages must not be staged: each read that ends a large
 * frame stops at the next header (rx.c, fill), or the start of every next
 * payload would be copied a second time, out of the staging buffer.
 *
 * Deterministic: the receiver's rx_lock is held while the sender's messages
 * gather in its socket (or ring), so the reads that follow find every byte
 * there, and which bytes they stage depends on the rules alone.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "base/sock.h"
#include "pair.h"
#include "transport/tcp/tcp.h"

/* Large enough to go straight into its destination (rx.c: DIRECT_MIN), and
 * four of them twice the staging buffer: staging them all copies twice
 * TCP_RXBUF_SIZE, the first read alone at most once that. */
#define MSG_LEN (32u * 1024u)
#define NMSG 4

/* Bytes waiting for b to read: in its socket, or in its ring. */
static long waiting_for(struct tcp_ep *eb)
{
	int n = 0;

	if (eb->base.on_shm)
		return rcci_shm_ring_rx_avail(&eb->shm);
	if (ioctl(eb->fd, FIONREAD, &n))
		return -1;
	return n;
}

static void large_run_not_staged(void)
{
	const long total = (long)NMSG * (MSG_LEN + WIRE_HDR_LEN);
	struct pair_opts o = { .split = true };
	struct tbuf s = { 0 }, r = { 0 };
	struct rcc_wc wc[NMSG];
	struct pair p;
	int n = 0;

	if (test_on_verbs())
		SKIP_CASE("tcp", "white box of the tcp transport's receive side");
	CHECK_OK(pair_open(&p, &o));
	struct tcp_ep *eb = tep(p.b);
	CHECK_OK(tbuf_alloc(&s, p.ctx, (size_t)NMSG * MSG_LEN, RCC_ACCESS_LOCAL_WRITE));
	CHECK_OK(tbuf_alloc(&r, p.ctx_b, (size_t)NMSG * MSG_LEN, RCC_ACCESS_LOCAL_WRITE));
	fill_pattern(s.p, s.len, 7);
	for (int i = 0; i < NMSG; i++) {
		struct rcc_sge rs = tbuf_sge(&r, (size_t)i * MSG_LEN, MSG_LEN);
		CHECK_OK(rcc_post_recv(p.b, &rs, 1, 100 + (uint64_t)i));
	}
	/* Room for all of them in b's socket while nobody reads it (the
	 * kernel grows a receive buffer only as its reader reads). */
	if (!eb->base.on_shm) {
		int want = 1 << 20;
		CHECK_MSG(!setsockopt(eb->fd, SOL_SOCKET, SO_RCVBUF, &want, sizeof(want)),
			  "SO_RCVBUF: %s", strerror(errno));
	}
	uint64_t staged_before = eb->rx_staged_bytes;
	rcci_lock_acquire(&eb->rx_lock);
	for (int i = 0; i < NMSG; i++) {
		struct rcc_sge ss = tbuf_sge(&s, (size_t)i * MSG_LEN, MSG_LEN);
		int rc = rcc_post_send(p.a, &ss, 1, (uint64_t)i, RCC_SEND_SIGNALED);
		if (rc < 0)
			rcci_lock_release(&eb->rx_lock);
		CHECK_OK(rc);
	}
	uint64_t deadline = rcci_deadline(TEST_TIMEOUT_MS);
	long there;
	/* a's progress thread moves on what a's socket did not take at once */
	while ((there = waiting_for(eb)) >= 0 && there < total && rcci_ms_left(deadline) > 0)
		sched_yield();
	rcci_lock_release(&eb->rx_lock);
	CHECK_MSG(there == total, "%ld of %ld bytes gathered for b", there, total);

	uint64_t end = rcci_deadline(TEST_TIMEOUT_MS);
	while (n < NMSG && rcci_ms_left(end) > 0) {
		int got = rcc_cq_poll(p.cq_b, wc + n, NMSG - n);
		CHECK(got >= 0);
		n += got;
	}
	CHECK_EQ(n, NMSG);
	for (int i = 0; i < NMSG; i++) {
		CHECK_EQ(wc[i].wr_id, 100 + (uint64_t)i);
		CHECK_WC(wc[i], RCC_WC_SUCCESS);
		CHECK_EQ(wc[i].byte_len, MSG_LEN);
	}
	CHECK_EQ(check_pattern(r.p, r.len, 7), -1);
	rcci_lock_acquire(&eb->rx_lock);
	uint64_t staged = eb->rx_staged_bytes - staged_before;
	rcci_lock_release(&eb->rx_lock);
	CHECK_MSG(staged <= TCP_RXBUF_SIZE,
		  "%" PRIu64 " payload bytes of %u went through the staging buffer", staged,
		  NMSG * MSG_LEN);
	for (int i = 0; i < NMSG; i++)
		EXPECT_STATUS(p.cq_a, (uint64_t)i, RCC_WC_SUCCESS);
	tbuf_free(&s);
	tbuf_free(&r);
	pair_close(&p);
}

TEST_MAIN(TEST(large_run_not_staged))
