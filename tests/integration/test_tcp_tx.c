/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tcp transport's send side and mr_lock (white box, socket and shared
 * memory; verbs has no such lock). rcc_mr_dereg() takes mr_lock's write side
 * to wait out every copy out of a region; a request whose payload lies in
 * registered memory is sent under its read side, so while a deregistration
 * holds the lock, posting one waits. An inline request's payload is the copy
 * made at post time: its post takes no lock and returns at once.
 * The test holds the write side itself, as a deregistration would, and
 * watches the posting thread: whether its post returns, or the thread
 * sleeps on the lock (a futex wait, read from /proc: no timing involved).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pair.h"
#include "transport/tcp/tcp.h"

#define LEN 64u

struct poster {
	struct rcc_ep *ep;
	struct rcc_sge sge;
	unsigned flags;
	int n; /* requests in its post: 1 goes alone (tx.c, send_lone), 2 through the rounds */
	_Atomic long tid;
	atomic_bool done;
	int rc;
};

static void *post_main(void *arg)
{
	struct poster *p = arg;

	atomic_store(&p->tid, (long)syscall(SYS_gettid));
	struct rcc_send_wr w[2];
	for (int i = 0; i < 2; i++)
		w[i] = (struct rcc_send_wr){ .wr_id = 1 + (uint64_t)i,
					     .sg_list = &p->sge,
					     .num_sge = 1,
					     .opcode = RCC_WR_SEND,
					     .flags = RCC_SEND_SIGNALED | p->flags };
	p->rc = rcc_post_send_list(p->ep, w, p->n, NULL);
	atomic_store(&p->done, true);
	return NULL;
}

/* Whether thread tid sleeps in a futex wait right now (x86-64 and others:
 * /proc/<pid>/task/<tid>/syscall starts with the call's number). */
static bool in_futex(long tid)
{
	char path[64], line[64];
	long nr = -1;

	snprintf(path, sizeof(path), "/proc/self/task/%ld/syscall", tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	if (fgets(line, sizeof(line), f))
		nr = strtol(line, NULL, 10);
	fclose(f);
	return nr == SYS_futex;
}

/* Whether this kernel shows a thread's system call (CONFIG_HAVE_ARCH_TRACEHOOK,
 * and /proc readable): the calling thread's own file says "running". */
static bool syscall_visible(void)
{
	char path[64], line[64];

	snprintf(path, sizeof(path), "/proc/self/task/%ld/syscall", (long)syscall(SYS_gettid));
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	bool ok = fgets(line, sizeof(line), f) != NULL;
	fclose(f);
	return ok;
}

/* Post n messages (one post) from another thread while mr_lock's write
 * side is held here: *returned 1 if the post returned, 0 if the thread
 * slept on the lock; the messages are then let go and received whole
 * either way. */
static void post_while_dereg(unsigned flags, int n, int *returned)
{
	struct pair p;
	struct pair_opts o = { .mode = RCC_CQ_POLL };
	struct tbuf a = { 0 }, b = { 0 };
	struct poster ps = { .flags = flags, .n = n };
	struct rcc_wc wc;
	pthread_t th;

	*returned = -1;

	CHECK_OK(pair_open(&p, &o));
	CHECK_OK(tbuf_alloc(&a, p.ctx, LEN, RCC_ACCESS_LOCAL_WRITE));
	/* a buffer per receive: one still posted may be written while the
	 * message before it is checked */
	CHECK_OK(tbuf_alloc(&b, p.ctx, (size_t)n * LEN, RCC_ACCESS_LOCAL_WRITE));
	fill_pattern(a.p, LEN, 7);
	for (int i = 0; i < n; i++) {
		struct rcc_sge rb = tbuf_sge(&b, (size_t)i * LEN, LEN);
		CHECK_OK(rcc_post_recv(p.b, &rb, 1, 1 + (uint64_t)i));
	}
	ps.ep = p.a;
	ps.sge = tbuf_sge(&a, 0, LEN);

	struct rcci_rwlock *mr_lock = &tctx(p.ctx)->mr_lock;
	rcci_rwlock_write(mr_lock);
	CHECK_OK(pthread_create(&th, NULL, post_main, &ps));
	uint64_t end = now_ms() + TEST_TIMEOUT_MS;
	while (*returned < 0 && now_ms() < end) {
		long tid = atomic_load(&ps.tid);
		if (atomic_load(&ps.done))
			*returned = 1;
		else if (tid && in_futex(tid))
			*returned = 0;
	}
	rcci_rwlock_write_end(mr_lock);
	pthread_join(th, NULL);
	CHECK_MSG(*returned >= 0, "the post neither returned nor slept in %d ms", TEST_TIMEOUT_MS);
	CHECK_OK(ps.rc);

	for (int i = 0; i < n; i++) {
		CHECK_OK(wait_one(p.cq_b, &wc, TEST_TIMEOUT_MS));
		CHECK_WC(wc, RCC_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, 1 + (uint64_t)i);
		CHECK_EQ(wc.byte_len, LEN);
		CHECK_EQ(check_pattern(b.p + (size_t)i * LEN, LEN, 7), -1);
		CHECK_OK(wait_one(p.cq_a, &wc, TEST_TIMEOUT_MS));
		CHECK_WC(wc, RCC_WC_SUCCESS);
	}
	tbuf_free(&a);
	tbuf_free(&b);
	pair_close(&p);
}

static bool white_box_runs(void)
{
	if (test_on_verbs()) {
		test_skip("tcp", "white box of the tcp transport's send side");
		return false;
	}
	if (!syscall_visible()) {
		test_skip("/proc/<pid>/task/<tid>/syscall", "where a thread sleeps is not shown");
		return false;
	}
	return true;
}

/* A request from registered memory, alone (n 1) or after another (n 2),
 * is not sent while a deregistration holds mr_lock. */
static void registered_payload_waits(int n)
{
	int returned;
	if (!white_box_runs())
		return;
	post_while_dereg(0, n, &returned);
	CHECK_MSG(returned == 0,
		  "a request from registered memory was sent while mr_lock was held for writing");
}

static void inline_payload_no_lock(int n)
{
	int returned;
	if (!white_box_runs())
		return;
	post_while_dereg(RCC_SEND_INLINE, n, &returned);
	CHECK_MSG(returned == 1, "an inline post waited for mr_lock");
}

static void registered_payload_waits_for_dereg(void) { registered_payload_waits(1); }
static void registered_list_waits_for_dereg(void) { registered_payload_waits(2); }
static void inline_payload_takes_no_lock(void) { inline_payload_no_lock(1); }
static void inline_list_takes_no_lock(void) { inline_payload_no_lock(2); }

TEST_MAIN(TEST(registered_payload_waits_for_dereg), TEST(registered_list_waits_for_dereg),
	  TEST(inline_payload_takes_no_lock), TEST(inline_list_takes_no_lock))
