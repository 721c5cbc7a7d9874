/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rcc-mesh under a launcher (docs/launch.md): no --nodes and no --rank, so
 * rank and size come from the bootstrap (PMIx under mpirun/srun, or the env
 * rendezvous), every rank listens on an ephemeral port and the node list is
 * the all-gather of everyone's "host:port". From there the run is exactly the
 * static one: same hello checks (the list hash covers the gathered list),
 * same report, same faults.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "launch.h"
#include "mesh.h"
#include "opts.h"
#include "rcc/util.h"

static const char *prog = "rcc-mesh";

void launch_open(struct mesh_opts *o)
{
	char err[RCC_BOOTSTRAP_ERROR_MAX];
	struct rcc_bootstrap_attr a = { .backend = o->bootstrap };
	int rc = rcc_bootstrap_open(&a, &o->boot, err, sizeof(err));

	if (rc == -ENOENT && o->bootstrap == RCC_BOOTSTRAP_AUTO)
		usage_error(prog,
			    "no nodes: give --nodes or --hostfile with --rank, or start rcc-mesh "
			    "under a launcher (mpirun, srun, or RANK/WORLD_SIZE/MASTER_ADDR/"
			    "MASTER_PORT; see docs/launch.md): %s",
			    err);
	if (rc) {
		fprintf(stderr, "%s: cannot start under a launcher: %s\n", prog, err);
		exit(MESH_EXIT_FAIL);
	}
	o->rank = rcc_bootstrap_rank(o->boot);
	o->nnodes = rcc_bootstrap_size(o->boot);
	if (o->nnodes < 2 || o->nnodes > MESH_MAX_NODES || o->collector >= o->nnodes) {
		rcc_bootstrap_close(o->boot);
		o->boot = NULL;
		if (o->nnodes < 2)
			usage_error(prog, "a mesh needs at least 2 nodes; the launcher started 1");
		if (o->nnodes > MESH_MAX_NODES)
			usage_error(prog,
				    "the launcher started %d ranks; rcc-mesh takes at most %d",
				    o->nnodes, MESH_MAX_NODES);
		usage_error(prog, "collector %d is not among the %d ranks", o->collector,
			    o->nnodes);
	}
	o->nodes = calloc((size_t)o->nnodes, sizeof(*o->nodes));
	if (!o->nodes) {
		fprintf(stderr, "%s: out of memory\n", prog);
		exit(MESH_EXIT_FAIL);
	}
}

void launch_listen_addr(const struct mesh *m, char *buf, size_t len)
{
	join_host_port(buf, len, m->o->bind ? m->o->bind : "0.0.0.0", 0);
}

int launch_exchange(struct mesh *m)
{
	struct mesh_opts *o = (struct mesh_opts *)m->o; /* its node list is ours to fill */
	size_t stride = sizeof(o->nodes[0].addr) - 1, *lens = NULL; /* room for a NUL */
	char host[256], mine[sizeof(o->nodes[0].addr)], *all = NULL;
	const char *addrs[MESH_MAX_NODES];
	uint8_t key[HELLO_KEY_LEN];
	int port = rcc_server_port(m->srv), rc;

	if (port <= 0) {
		complain(m, "cannot tell which port we listen on: %s", rcc_strerror(port));
		return MESH_EXIT_FAIL;
	}
	launch_host(o->boot, o->bind, host, sizeof(host));
	join_host_port(mine, sizeof(mine), host, port);
	int rdv = rcc_bootstrap_rendezvous_port(o->boot);
	if (rdv > 0) { /* for scripts that gave rank 0 port 0 */
		char at[300];
		join_host_port(at, sizeof(at), host, rdv);
		say(m, "rendezvous listening on %s", at);
	}
	all = calloc((size_t)m->n, stride);
	lens = calloc((size_t)m->n, sizeof(*lens));
	if (!all || !lens) {
		complain(m, "out of memory");
		rc = MESH_EXIT_FAIL;
		goto out;
	}
	rc = rcc_bootstrap_allgather(o->boot, mine, strlen(mine), all, stride, lens,
				     o->connect_timeout_ms);
	if (rc) {
		/* the bootstrap's sentence names the rank; ours says what we were doing */
		complain(m, "address exchange (%s bootstrap) failed: %s",
			 rcc_bootstrap_backend_name(o->boot), rcc_bootstrap_error(o->boot));
		rc = rc == -ETIMEDOUT || rc == -ECONNRESET || rc == -ECANCELED ? MESH_EXIT_PEER :
										 MESH_EXIT_FAIL;
		goto out;
	}
	for (int i = 0; i < m->n; i++) {
		char entry[sizeof(o->nodes[0].addr)], err[400];
		memcpy(entry, all + (size_t)i * stride, lens[i]);
		entry[lens[i]] = 0;
		if (node_parse(entry, &o->nodes[i], err, sizeof(err))) {
			/* complain() escapes what the rank sent */
			complain(m, "rank %d published an address we cannot use: %s", i, err);
			rc = MESH_EXIT_PEER;
			goto out;
		}
		addrs[i] = o->nodes[i].addr;
	}
	/* with a job secret, every hello is tagged and checked (wire.h) */
	rc = rcc_bootstrap_derive_key(o->boot, HELLO_KEY_LABEL, key);
	if (rc && rc != -ENOKEY) {
		complain(m, "cannot derive the hellos' key from the job secret: %s",
			 rcc_strerror(rc));
		rc = MESH_EXIT_FAIL;
		goto out;
	}
	pthread_mutex_lock(&m->lock);
	m->keyed = !rc;
	if (m->keyed)
		memcpy(m->hello_key, key, sizeof(key));
	m->list_hash = list_hash(addrs, m->n);
	m->nodes_state = NODES_KNOWN;
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
	say(m, "addresses exchanged (%s bootstrap, %d ranks): we are %s",
	    rcc_bootstrap_backend_name(o->boot), m->n, mine);
	if (m->keyed)
		say(m, "hellos carry a tag under the job secret: a connection without it is "
		       "turned away");
	rc = MESH_EXIT_OK;
out:
	if (rc) {
		pthread_mutex_lock(&m->lock);
		m->nodes_state = NODES_FAILED;
		pthread_cond_broadcast(&m->cond);
		pthread_mutex_unlock(&m->lock);
	}
	memset(key, 0, sizeof(key));
	free(lens);
	free(all);
	return rc;
}

bool launch_wait_nodes(struct mesh *m)
{
	uint64_t until = mono_ns() + (uint64_t)m->o->connect_timeout_ms * 1000000ull;
	struct timespec ts = { .tv_sec = (time_t)(until / 1000000000ull),
			       .tv_nsec = (long)(until % 1000000000ull) };
	int rc = 0;

	pthread_mutex_lock(&m->lock);
	while (m->nodes_state == NODES_PENDING && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&m->cond, &m->lock, &ts);
	bool known = m->nodes_state == NODES_KNOWN;
	pthread_mutex_unlock(&m->lock);
	return known;
}
