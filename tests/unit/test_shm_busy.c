/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rcci_shm_busy_wait() (transport/tcp/shm_busy.h): the wait for a same-host
 * peer's copy ends when its busy word clears, when the peer process is
 * gone, or at the deadline -- which bounds the first yields too: a deadline
 * already past (a held failure carried out late, from the progress thread)
 * is one look even when every yield gives the CPU away for a time slice.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "rcc/util.h"
#include "transport/tcp/shm_busy.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

static const uint64_t MS = 1000000ull;

static void clear_word_is_no_wait(void)
{
	_Atomic uint32_t busy = 0;

	CHECK(rcci_shm_busy_wait(&busy, 0, -1)); /* even with the deadline long past */
}

struct hog {
	atomic_bool stop;
	atomic_bool running;
	cpu_set_t cpu;
};

/* Spin on the test thread's CPU until told (at most 20 s): every yield
 * there gives it a time slice, as a loaded machine does. */
static void *hog_main(void *arg)
{
	struct hog *h = arg;
	uint64_t end = now_ms() + 20000;

	pthread_setaffinity_np(pthread_self(), sizeof(h->cpu), &h->cpu);
	atomic_store(&h->running, true);
	while (!atomic_load(&h->stop) && now_ms() < end)
		;
	return NULL;
}

/* A deadline already past: false after one look, not after a thousand
 * yields to the thread that shares our CPU (seconds). */
static void past_deadline_looks_once(void)
{
	_Atomic uint32_t busy = 1;
	struct hog h = { 0 };
	cpu_set_t was;
	pthread_t th;

	CHECK_OK(-pthread_getaffinity_np(pthread_self(), sizeof(was), &was));
	CPU_ZERO(&h.cpu);
	CPU_SET(sched_getcpu(), &h.cpu);
	CHECK_OK(-pthread_setaffinity_np(pthread_self(), sizeof(h.cpu), &h.cpu));
	CHECK_OK(-pthread_create(&th, NULL, hog_main, &h));
	uint64_t until = now_ms() + TEST_TIMEOUT_MS;
	while (!atomic_load(&h.running) && now_ms() < until)
		sched_yield();
	uint64_t t0 = rcc_now_ns();
	bool done = rcci_shm_busy_wait(&busy, t0, -1);
	uint64_t took = rcc_now_ns() - t0;
	atomic_store(&h.stop, true);
	pthread_join(th, NULL);
	pthread_setaffinity_np(pthread_self(), sizeof(was), &was);
	CHECK(atomic_load(&h.running));
	CHECK(!done);
	CHECK_MSG(took < 200 * MS, "took %llu ms", (unsigned long long)(took / MS));
}

/* Busy for good: false once the deadline passed, not before. */
static void bounded_by_deadline(void)
{
	_Atomic uint32_t busy = 1;
	uint64_t t0 = rcc_now_ns();

	CHECK(!rcci_shm_busy_wait(&busy, t0 + 150 * MS, -1));
	uint64_t took = rcc_now_ns() - t0;
	CHECK_MSG(took >= 150 * MS && took < 150 * MS + TEST_TIMEOUT_MS * MS, "took %llu ms",
		  (unsigned long long)(took / MS));
}

struct copier {
	_Atomic uint32_t busy;
};

/* The peer's copy: busy for 20 ms, then done. */
static void *copier_main(void *arg)
{
	struct copier *c = arg;

	nanosleep(&(struct timespec){ 0, 20 * 1000000L }, NULL);
	atomic_store_explicit(&c->busy, 0, memory_order_release);
	return NULL;
}

static void ends_with_the_copy(void)
{
	struct copier c = { .busy = 1 };
	pthread_t th;

	CHECK_OK(-pthread_create(&th, NULL, copier_main, &c));
	uint64_t t0 = rcc_now_ns();
	bool done = rcci_shm_busy_wait(&c.busy, t0 + (uint64_t)TEST_TIMEOUT_MS * MS, -1);
	uint64_t took = rcc_now_ns() - t0;
	pthread_join(th, NULL);
	CHECK(done);
	CHECK_MSG(took < (uint64_t)TEST_TIMEOUT_MS * MS, "took %llu ms",
		  (unsigned long long)(took / MS));
}

/* A peer process that exited copies no more: its pidfd ends the wait
 * (the word stays set, as a process killed inside a copy leaves it). */
static void dead_peer_ends_wait(void)
{
	_Atomic uint32_t busy = 1;
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	CHECK(pid > 0);
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	if (pidfd < 0)
		SKIP_CASE("pidfd", "pidfd_open refused here");
	/* 10 s: the thousand yields before the look at the pidfd, on a
	 * loaded machine, with room to spare */
	bool done = rcci_shm_busy_wait(&busy, rcc_now_ns() + 10000 * MS, pidfd);
	close(pidfd);
	CHECK(done);
}

TEST_MAIN(TEST(clear_word_is_no_wait), TEST(past_deadline_looks_once), TEST(bounded_by_deadline),
	  TEST(ends_with_the_copy), TEST(dead_peer_ends_wait))
