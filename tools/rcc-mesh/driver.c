/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Driver threads run the outgoing connections: one per connection in per-ep
 * mode; in shared mode --threads of them, each driving the connections that
 * complete on its group's CQ. A driver busy-polls its
 * CQs (poll mode) or sleeps in epoll on their descriptors and on an eventfd
 * that wakes it when the phase changes; it never sleeps past a deadline of
 * its connections, nor longer than CHECK_MS, so a connection that ends
 * without a completion is noticed.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "mesh.h"

#define CHECK_MS 100
#define SPINS_PER_CHECK 256

struct driver {
	struct mesh *m;
	pthread_t thread;
	bool started;
	atomic_bool stop;
	struct out_conn **conns;
	int n;
	struct out_group *grp; /* shared mode: the CQ all of conns complete on */
	int wakefd, epfd;
};

static int sleep_ms(const struct driver *d, uint64_t now, bool *all_finished)
{
	uint64_t next = 0;
	*all_finished = true;
	for (int i = 0; i < d->n; i++) {
		uint64_t dl = out_deadline(d->conns[i]);
		if (dl && (!next || dl < next))
			next = dl;
		*all_finished &= out_finished(d->conns[i]);
	}
	if (!next)
		return CHECK_MS;
	if (next <= now)
		return 0;
	uint64_t ms = (next - now) / 1000000 + 1;
	return ms < CHECK_MS ? (int)ms : CHECK_MS;
}

static void *driver_main(void *arg)
{
	struct driver *d = arg;
	bool spin = d->m->o->cq_mode == RCC_CQ_POLL;
	unsigned idle = 0;

	while (!atomic_load_explicit(&d->stop, memory_order_acquire)) {
		uint64_t now = mono_ns();
		int work = d->grp ? out_group_drain(d->grp, now) : 0;
		for (int i = 0; i < d->n; i++)
			work += out_step(d->conns[i], now);
		if (work) {
			idle = 0;
			continue;
		}
		bool all_finished;
		int ms = sleep_ms(d, now, &all_finished);
		if (spin && !all_finished) {
			if (++idle % SPINS_PER_CHECK)
				continue;
			ms = 0; /* only look at the wake-up descriptor */
		}
		struct epoll_event ev[8];
		int k = epoll_wait(d->epfd, ev, 8, ms);
		for (int i = 0; i < k; i++) {
			uint64_t v;
			if (ev[i].data.fd == d->wakefd && read(d->wakefd, &v, sizeof(v)) < 0)
				continue; /* nothing to drain */
		}
	}
	return NULL;
}

static void driver_free(struct driver *d)
{
	if (d->epfd >= 0)
		close(d->epfd);
	if (d->wakefd >= 0)
		close(d->wakefd);
	free(d->conns);
}

static int driver_init(struct mesh *m, struct driver *d, int nconns)
{
	struct epoll_event ev = { .events = EPOLLIN };

	d->m = m;
	atomic_init(&d->stop, false);
	d->conns = calloc((size_t)nconns, sizeof(*d->conns));
	if (!d->conns)
		return -ENOMEM;
	d->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (d->wakefd < 0)
		return -errno;
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (d->epfd < 0)
		return -errno;
	ev.data.fd = d->wakefd;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->wakefd, &ev))
		return -errno;
	return 0;
}

static int driver_watch(struct driver *d, struct rcc_cq *cq)
{
	if (d->m->o->cq_mode == RCC_CQ_POLL)
		return 0;
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = rcc_cq_fd(cq) };
	if (ev.data.fd < 0)
		return ev.data.fd;
	return epoll_ctl(d->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev) ? -errno : 0;
}

/* A connection of a group is watched through the group's CQ, once. */
static int driver_add(struct driver *d, struct out_conn *c)
{
	struct out_group *g = out_group_of(c);

	d->conns[d->n++] = c;
	if (g && d->grp)
		return 0;
	d->grp = g;
	return driver_watch(d, out_cq(c));
}

int drivers_start(struct mesh *m)
{
	int peers = m->n - 1;
	int nd = m->ngroups ? m->ngroups : peers;
	int per = (peers + nd - 1) / nd, rc = 0, k = 0;
	sigset_t all, old;

	m->drivers = calloc((size_t)nd, sizeof(*m->drivers));
	if (!m->drivers)
		return -ENOMEM;
	m->ndrivers = nd;
	for (int i = 0; i < nd; i++)
		m->drivers[i].wakefd = m->drivers[i].epfd = -1;
	for (int i = 0; i < nd && !rc; i++)
		rc = driver_init(m, &m->drivers[i], per);
	/* shared mode: driver i runs group i; per-ep: one connection each */
	for (int i = 0; i < m->ngroups && !rc; i++)
		for (int j = 0; j < m->groups[i].n && !rc; j++)
			rc = driver_add(&m->drivers[i], m->groups[i].conns[j]);
	for (int r = 0; r < m->n && !rc && !m->ngroups; r++)
		if (r != m->rank)
			rc = driver_add(&m->drivers[k++], m->peers[r].out);
	if (rc) {
		complain(m, "cannot set up the driver threads: %s", rcc_strerror(rc));
		drivers_stop(m);
		return rc;
	}
	/* Signals are the main thread's business. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (int i = 0; i < nd && !rc; i++) {
		rc = -pthread_create(&m->drivers[i].thread, NULL, driver_main, &m->drivers[i]);
		m->drivers[i].started = !rc;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		complain(m, "cannot start a driver thread: %s", rcc_strerror(rc));
		drivers_stop(m);
	}
	return rc;
}

void drivers_wake(struct mesh *m)
{
	uint64_t one = 1;
	for (int i = 0; i < m->ndrivers; i++)
		if (m->drivers[i].wakefd >= 0 &&
		    write(m->drivers[i].wakefd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			complain(m, "cannot wake a driver thread: %s", rcc_strerror(-errno));
}

void drivers_stop(struct mesh *m)
{
	for (int i = 0; i < m->ndrivers; i++)
		atomic_store_explicit(&m->drivers[i].stop, true, memory_order_release);
	drivers_wake(m);
	for (int i = 0; i < m->ndrivers; i++) {
		if (m->drivers[i].started)
			pthread_join(m->drivers[i].thread, NULL);
		driver_free(&m->drivers[i]);
	}
	free(m->drivers);
	m->drivers = NULL;
	m->ndrivers = 0;
}
