/* SPDX-License-Identifier: BSD-3-Clause */
/* base/spin_seats.h: one seat per CPU of the calling thread's affinity mask,
 * given back, and the mask read again once 100 ms have passed. Each case runs
 * in a thread of its own: the mask read is cached per thread. */
#include <pthread.h>
#include <sched.h>

#include "base/spin_seats.h"
#include "harness.h"

#define MS 1000000ull

/* The first n CPUs of this thread's mask in *set; false if it has fewer. */
static bool first_cpus(int n, cpu_set_t *set)
{
	cpu_set_t mine;

	CPU_ZERO(set);
	if (sched_getaffinity(0, sizeof(mine), &mine))
		return false;
	for (int cpu = 0; cpu < CPU_SETSIZE && n > 0; cpu++)
		if (CPU_ISSET(cpu, &mine)) {
			CPU_SET(cpu, set);
			n--;
		}
	return n == 0;
}

static void *in_thread(void *fn)
{
	((void (*)(void))fn)();
	return NULL;
}

static void run_in_thread(void (*fn)(void))
{
	pthread_t th;

	CHECK_EQ(pthread_create(&th, NULL, in_thread, (void *)fn), 0);
	CHECK_EQ(pthread_join(th, NULL), 0);
}

static void one_cpu_body(void)
{
	cpu_set_t one;

	CHECK(first_cpus(1, &one));
	CHECK_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
	CHECK_EQ(rcci_spin_seats_taken(), 0);
	CHECK(rcci_spin_seat_take(1 * MS));
	CHECK(!rcci_spin_seat_take(1 * MS)); /* full: and nothing to give back */
	CHECK_EQ(rcci_spin_seats_taken(), 1);
	rcci_spin_seat_give();
	CHECK_EQ(rcci_spin_seats_taken(), 0);
	CHECK(rcci_spin_seat_take(2 * MS)); /* free again */
	rcci_spin_seat_give();
	CHECK_EQ(rcci_spin_seats_taken(), 0);
}

static void one_cpu_one_seat(void) { run_in_thread(one_cpu_body); }

static void two_cpus_body(void)
{
	cpu_set_t two;

	if (!first_cpus(2, &two))
		SKIP_CASE("2 CPUs", "this thread may run on one CPU only");
	CHECK_EQ(sched_setaffinity(0, sizeof(two), &two), 0);
	CHECK(rcci_spin_seat_take(1 * MS));
	CHECK(rcci_spin_seat_take(1 * MS));
	CHECK(!rcci_spin_seat_take(1 * MS));
	CHECK_EQ(rcci_spin_seats_taken(), 2);
	rcci_spin_seat_give();
	rcci_spin_seat_give();
	CHECK_EQ(rcci_spin_seats_taken(), 0);
}

static void two_cpus_two_seats(void) { run_in_thread(two_cpus_body); }

static void mask_reread_body(void)
{
	cpu_set_t one, two;

	if (!first_cpus(2, &two))
		SKIP_CASE("2 CPUs", "this thread may run on one CPU only");
	CHECK(first_cpus(1, &one));
	CHECK_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
	CHECK(rcci_spin_seat_take(1000 * MS));
	/* a second CPU, but the mask read at 1000 ms holds until 1100 ms */
	CHECK_EQ(sched_setaffinity(0, sizeof(two), &two), 0);
	CHECK(!rcci_spin_seat_take(1099 * MS));
	CHECK(rcci_spin_seat_take(1100 * MS));
	CHECK_EQ(rcci_spin_seats_taken(), 2);
	rcci_spin_seat_give();
	rcci_spin_seat_give();
	CHECK_EQ(rcci_spin_seats_taken(), 0);
}

static void mask_read_again_after_100ms(void) { run_in_thread(mask_reread_body); }

TEST_MAIN(TEST(one_cpu_one_seat), TEST(two_cpus_two_seats), TEST(mask_read_again_after_100ms))
