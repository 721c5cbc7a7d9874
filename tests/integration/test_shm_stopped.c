/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A same-host peer process stopped (SIGSTOP, as a debugger stops it) in the
 * middle of a mapped copy into our memory (docs/shm.md, "A peer stopped
 * inside a copy"). test_shm_map plays the stopped copier inside one process
 * by setting its busy flag; here a real child loops 1 MiB mapped WRITEs
 * into a region of ours and is stopped until its flag says it was caught
 * inside one. Its silence then makes our progress thread declare it dead
 * -- a failure that meets the stopped copy -- and what is checked is what
 * an application sees: another connection of the same context keeps being
 * served all along (each READ far within the peer timeout, byte for byte),
 * the dead one's endpoint leaves RCC_EP_CONNECTED within two peer timeouts
 * (the hold's deadline), and everything closes once the child is killed.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pair.h"
#include "transport/tcp/tcp.h"

enum {
	REGION = 1 << 20,    /* one mapped WRITE's worth */
	IN_FLIGHT = 4,       /* the child's WRITEs posted at a time */
	PEER_TIMEOUT = 1500, /* ms, our endpoint to the child */
	READ_BOUND = 600,    /* ms: a progress thread stalled by the child would
			     * take a whole peer timeout */
	SMALL = 64,
	CATCH_TRIES = 500, /* stops until one lands inside a copy */
};

static const char *self_path = "test_shm_stopped"; /* argv[0] */

/* The child: connect, receive the region's address and key, then keep
 * IN_FLIGHT 1 MiB WRITEs into it posted for ever. It writes one byte to
 * notify_fd once its first WRITE completed: 'm' when it went through the
 * mapping, 'r' when it took the ring (no mapped transfers here). */
static int writer_child(int port, int notify_fd)
{
	struct rcc_ep_attr attr = { .peer_timeout_ms = 3600000 };
	struct peer_child pc;
	struct rcc_mr *src_mr, *desc_mr;
	uint8_t desc[16];
	struct rcc_wc wc;
	int rc = peer_child_open(false, port, notify_fd, NULL, attr, &pc);

	if (rc)
		return rc;
	void *src = malloc(REGION);
	if (!src || rcc_mr_reg(pc.ctx, src, REGION, RCC_ACCESS_LOCAL_WRITE, &src_mr) ||
	    rcc_mr_reg(pc.ctx, desc, sizeof(desc), RCC_ACCESS_LOCAL_WRITE, &desc_mr))
		return 5;
	fill_pattern(src, REGION, 7);
	struct rcc_sge ds = rcc_mr_sge(desc_mr, desc, sizeof(desc));
	if (rcc_post_recv(pc.ep, &ds, 1, 0) || wait_one(pc.cq, &wc, TEST_TIMEOUT_MS) ||
	    wc.status != RCC_WC_SUCCESS || wc.byte_len != sizeof(desc))
		return 6;
	uint64_t addr = rcc_get_le64(desc);
	uint32_t rkey = rcc_get_le32(desc + 8);
	struct rcc_sge s = rcc_mr_sge(src_mr, src, REGION);
	int out = 0;
	bool told = false;
	for (;;) {
		while (out < IN_FLIGHT) {
			if (rcc_post_write(pc.ep, &s, 1, addr, rkey, 1, RCC_SEND_SIGNALED))
				return 7;
			out++;
		}
		int n = rcc_cq_poll(pc.cq, &wc, 1);
		if (n < 0 || (n && wc.status != RCC_WC_SUCCESS))
			return 8;
		out -= n;
		if (n && !told) {
			char c = atomic_load(&tep(pc.ep)->shm.mapped.copies) ? 'm' : 'r';
			if (write(notify_fd, &c, 1) != 1)
				return 9;
			told = true;
		}
	}
}

/* Our context (the child's server and a client's), the child, and a client
 * context connected to ours. */
struct world {
	struct rcc_ctx *ctx, *cctx; /* ours (the child's server), a client's */
	struct rcc_cq *cq, *ccq;
	struct rcc_listener *lst;
	struct rcc_ep *to_child, *client, *served;
	void *region;
	struct rcc_mr *region_mr;
	struct tbuf far, near, desc;
	struct peer_proc child;
	bool child_alive;
};

/* The client's READ of SMALL bytes of far (pattern seed) into near, within
 * READ_BOUND ms, checked byte for byte: NULL, or why not. */
static const char *bounded_read(struct world *w, uint64_t seed)
{
	struct rcc_remote_mr rm = rcc_mr_remote(w->far.mr);
	struct rcc_sge sg = tbuf_sge(&w->near, 0, SMALL);
	struct rcc_wc wc;

	fill_pattern(w->far.p, SMALL, seed);
	memset(w->near.p, 0, SMALL);
	if (rcc_post_read(w->client, &sg, 1, rm.addr, rm.rkey, seed, RCC_SEND_SIGNALED))
		return "post";
	if (wait_one(w->ccq, &wc, READ_BOUND))
		return "not answered within the bound";
	if (wc.wr_id != seed || wc.status != RCC_WC_SUCCESS)
		return "failed";
	return check_pattern(w->near.p, SMALL, seed) == -1 ? NULL : "wrong bytes";
}

/* Stop the child; true once it is stopped inside a mapped copy into our
 * region (its busy flag, as our endpoint sees it), else it runs on between
 * tries while the other connection does one READ. */
static bool caught_in_copy(struct world *w, int *tries)
{
	struct shm_map *m = &tep(w->to_child)->shm.mapped;
	int status;

	for (*tries = 1; *tries <= CATCH_TRIES; (*tries)++) {
		if (kill(w->child.pid, SIGSTOP) || waitpid(w->child.pid, &status, WUNTRACED) < 0 ||
		    !WIFSTOPPED(status))
			return false;
		if (rcci_shm_map_peer_busy(m))
			return true;
		if (kill(w->child.pid, SIGCONT) || bounded_read(w, 1000 + (uint64_t)*tries))
			return false;
	}
	return false;
}

/* Our context with a listener, the child connected and told where to
 * write, and a client context connected to ours (served: our side of it).
 * The child's byte in *how ('m' mapped, 'r' ring). */
static int world_open(struct world *w, char *how)
{
	struct rcc_ep_attr ta = { .peer_timeout_ms = PEER_TIMEOUT };
	struct rcc_ep_attr ca = { 0 }, sa = { 0 };
	char addr[128];
	int rc;

	memset(w, 0, sizeof(*w));
	if ((rc = test_ctx_open(&w->ctx)) || (rc = rcc_cq_create(w->ctx, NULL, &w->cq)))
		return rc;
	snprintf(addr, sizeof(addr), "%s:0", test_addr());
	if ((rc = rcc_listen(w->ctx, addr, 0, &w->lst)) ||
	    (rc = rcc_mem_alloc(w->ctx, REGION, &w->region)) ||
	    (rc = rcc_mr_reg(w->ctx, w->region, REGION, ALL_ACCESS, &w->region_mr)) ||
	    (rc = tbuf_alloc(&w->desc, w->ctx, 16, RCC_ACCESS_LOCAL_WRITE)) ||
	    (rc = tbuf_alloc(&w->far, w->ctx, SMALL, ALL_ACCESS)) ||
	    (rc = peer_spawn_as(&w->child, self_path, "--writer-child")))
		return rc;
	w->child_alive = true;
	peer_go(&w->child, rcc_listener_port(w->lst));
	ta.send_cq = ta.recv_cq = w->cq;
	if ((rc = rcc_accept(w->lst, &ta, TEST_TIMEOUT_MS, &w->to_child)))
		return rc;
	struct rcc_remote_mr rm = rcc_mr_remote(w->region_mr);
	rcc_put_le64(w->desc.p, rm.addr);
	rcc_put_le32(w->desc.p + 8, rm.rkey);
	rcc_put_le32(w->desc.p + 12, 0);
	struct rcc_sge ds = tbuf_sge(&w->desc, 0, 16);
	struct rcc_wc wc;
	if ((rc = rcc_post_send(w->to_child, &ds, 1, 1, RCC_SEND_SIGNALED)) ||
	    (rc = wait_one(w->cq, &wc, TEST_TIMEOUT_MS)))
		return rc;
	if (wc.status != RCC_WC_SUCCESS || read(w->child.from_child, how, 1) != 1)
		return -EIO;
	if ((rc = test_ctx_open(&w->cctx)) || (rc = rcc_cq_create(w->cctx, NULL, &w->ccq)) ||
	    (rc = tbuf_alloc(&w->near, w->cctx, SMALL, RCC_ACCESS_LOCAL_WRITE)))
		return rc;
	ca.send_cq = ca.recv_cq = w->ccq;
	sa.send_cq = sa.recv_cq = w->cq;
	return pair_connect(w->cctx, w->lst, &ca, &sa, &w->client, &w->served);
}

static void world_close(struct world *w)
{
	if (w->child_alive)
		peer_kill(&w->child);
	if (w->child.to_child > 0)
		close(w->child.to_child);
	if (w->child.from_child > 0)
		close(w->child.from_child);
	if (w->client)
		TEARDOWN(rcc_ep_close(w->client));
	if (w->served)
		TEARDOWN(rcc_ep_close(w->served));
	if (w->to_child)
		TEARDOWN(rcc_ep_close(w->to_child));
	tbuf_free(&w->near);
	tbuf_free(&w->far);
	tbuf_free(&w->desc);
	if (w->region_mr)
		TEARDOWN(rcc_mr_dereg(w->region_mr));
	if (w->region)
		TEARDOWN(rcc_mem_free(w->ctx, w->region));
	if (w->lst)
		TEARDOWN(rcc_listener_close(w->lst));
	if (w->ccq)
		TEARDOWN(rcc_cq_destroy(w->ccq));
	if (w->cq)
		TEARDOWN(rcc_cq_destroy(w->cq));
	if (w->cctx)
		TEARDOWN(rcc_ctx_close(w->cctx));
	if (w->ctx)
		TEARDOWN(rcc_ctx_close(w->ctx));
}

/*
 * The child stopped inside a copy stays silent; our progress thread takes
 * it for dead after the peer timeout and fails its endpoint -- which must
 * not wait for the stopped copy on that thread: the client's READs, served
 * by the same thread, go on answering far within the timeout. The endpoint
 * leaves RCC_EP_CONNECTED by the hold's deadline (a second timeout).
 */
static void stopped_writer_declared_dead(void)
{
	struct world w;
	char how = 0;
	int tries = 0;

	int rc = world_open(&w, &how);
	if (rc) {
		world_close(&w);
		CHECK_OK(rc);
		CHECK(!rc);
	}
	if (how != 'm') {
		world_close(&w);
		SKIP_CASE("pidfd_getfd", "the child's WRITEs took the ring (mapped transfers off "
					 "or refused here)");
	}
	bool caught = caught_in_copy(&w, &tries);
	uint64_t start = now_ms(), end = start + 2 * PEER_TIMEOUT + TEST_TIMEOUT_MS;
	const char *why = NULL;
	uint64_t seed = 1, reads = 0;
	while (caught && !why && rcc_ep_state(w.to_child) == RCC_EP_CONNECTED && now_ms() < end) {
		why = bounded_read(&w, ++seed);
		reads++;
	}
	uint64_t left_after = now_ms() - start;
	enum rcc_ep_state st = rcc_ep_state(w.to_child);
	world_close(&w);
	CHECK_MSG(caught, "the child was not caught inside a copy in %d stops", tries);
	CHECK_MSG(!why, "READ %" PRIu64 " of the other connection after %" PRIu64 " ms: %s", reads,
		  left_after, why);
	CHECK_MSG(st != RCC_EP_CONNECTED, "still connected %" PRIu64 " ms after the stop",
		  left_after);
	/* not before the silence could count as death */
	CHECK_MSG(left_after >= PEER_TIMEOUT / 2, "left after %" PRIu64 " ms", left_after);
	CHECK(reads > 0);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		TEST(stopped_writer_declared_dead),
	};

	self_path = argv[0];
	if (argc == 4 && !strcmp(argv[1], "--writer-child"))
		return writer_child(atoi(argv[2]), atoi(argv[3]));
	if (test_on_verbs() || test_shm() != RCC_SHM_REQUIRE) {
		printf("test_shm_stopped runs with RCC_TEST_TRANSPORT=shm only\n");
		return 77;
	}
	return test_main(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
