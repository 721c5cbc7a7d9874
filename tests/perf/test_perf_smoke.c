/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A short run of every rcc-perf test mode: the built binary as server and as
 * client (fork + exec, pinned to different CPUs when there are two), a few
 * iterations each, every child bounded in time. Transport and address come
 * from RCC_TEST_TRANSPORT / RCC_TEST_ADDR (tcp over 127.0.0.1 by default).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "pair.h"
#include "perf.h"

#ifndef RCC_PERF_BIN
#error "RCC_PERF_BIN must name the rcc-perf binary"
#endif

/* The build tree may have moved (the Soft-RoCE VM mounts the repo elsewhere):
 * RCC_PERF_BIN from the environment, else next to this test in the build tree,
 * else where it was at build time. */
static const char *perf_bin(void)
{
	static char path[4096 + 64];
	char self[4096];
	const char *env = getenv("RCC_PERF_BIN");
	ssize_t n;

	if (env && *env)
		return env;
	if (path[0])
		return path;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = 0; /* .../tests/perf */
			snprintf(path, sizeof(path), "%s/../../tools/rcc-perf/rcc-perf", self);
			if (access(path, X_OK) == 0)
				return path;
		}
	}
	snprintf(path, sizeof(path), "%s", RCC_PERF_BIN);
	return path;
}

#define MAX_ARGS 48
#define SERVER_READY_MS 10000
#define CLIENT_MS 40000
#define SERVER_EXIT_MS 10000

struct child {
	pid_t pid;
	int out; /* read end of its stdout, or -1 */
};

static char tmpdir[64];

/* argv for the binary: transport options first, then the given ones. */
static int build_argv(const char **argv, const char *const *args)
{
	static char transport[16];
	int n = 0;

	snprintf(transport, sizeof(transport), "%s", rcc_transport_name(test_transport()));
	argv[n++] = perf_bin();
	argv[n++] = "-T";
	argv[n++] = transport;
	for (; args && *args && n < MAX_ARGS - 1; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	return n;
}

static void pin(int cpu)
{
	cpu_set_t set;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* Start argv with stdout to a pipe (out) or to the file out_path; stderr to err_path. */
static int spawn(const char **argv, int cpu, bool pipe_out, const char *out_path,
		 const char *err_path, struct child *c)
{
	int p[2] = { -1, -1 };

	if (pipe_out && pipe2(p, O_CLOEXEC))
		return -errno;
	c->pid = fork();
	if (c->pid < 0)
		return -errno;
	if (c->pid == 0) {
		int out = pipe_out ? p[1] : open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (out < 0 || err < 0)
			_exit(126);
		dup2(out, 1);
		dup2(err, 2);
		pin(cpu);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	if (pipe_out)
		close(p[1]);
	c->out = pipe_out ? p[0] : -1;
	return 0;
}

/* Wait for exit at most ms; a child that overstays is killed. -ETIMEDOUT then. */
static int reap(struct child *c, int ms, int *status)
{
	int rc = 0;
	int fd = (int)syscall(SYS_pidfd_open, c->pid, 0);

	if (fd >= 0) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, ms) == 0) {
			kill(c->pid, SIGKILL);
			rc = -ETIMEDOUT;
		}
		close(fd);
	}
	waitpid(c->pid, status, 0);
	if (c->out >= 0)
		close(c->out);
	c->out = -1;
	return rc;
}

/* Read the child's stdout until a line contains what; bounded. */
static bool read_until(struct child *c, const char *what, char *buf, size_t len, int ms)
{
	size_t have = 0;
	uint64_t end = now_ms() + (uint64_t)ms;

	buf[0] = 0;
	while (have + 1 < len) {
		struct pollfd p = { .fd = c->out, .events = POLLIN };
		uint64_t now = now_ms();
		if (now >= end || poll(&p, 1, (int)(end - now)) <= 0)
			return false;
		ssize_t r = read(c->out, buf + have, len - 1 - have);
		if (r <= 0)
			return false;
		have += (size_t)r;
		buf[have] = 0;
		if (strstr(buf, what))
			return true;
	}
	return false;
}

static void show_file(const char *what, const char *path)
{
	char line[512];
	FILE *f = fopen(path, "r");

	if (!f)
		return;
	fprintf(stderr, "---- %s (%s)\n", what, path);
	while (fgets(line, sizeof(line), f))
		fputs(line, stderr);
	fclose(f);
}

static int count_in_file(const char *path, const char *what)
{
	char line[1024];
	int n = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, what) != NULL;
	fclose(f);
	return n;
}

static char srv_err[128], cli_out[128], cli_err[128];

/* Start a server on a free port; returns the port or a negative errno. */
static int server_start(struct child *srv, const char *const *extra)
{
	const char *argv[MAX_ARGS];
	const char *args[MAX_ARGS] = { "-p", "0", "--quiet" };
	char buf[512];
	int n = 3;

	for (; extra && *extra && n < MAX_ARGS - 1; extra++)
		args[n++] = *extra;
	args[n] = NULL;
	build_argv(argv, args);
	if (spawn(argv, 0, true, NULL, srv_err, srv) < 0)
		return -ECHILD;
	if (!read_until(srv, "waiting for a client", buf, sizeof(buf), SERVER_READY_MS)) {
		int st;
		reap(srv, 1000, &st);
		show_file("server stderr", srv_err);
		return -ETIMEDOUT;
	}
	const char *at = strstr(buf, "on port ");
	return at ? atoi(at + 8) : -EPROTO;
}

/*
 * One client run against a fresh server. want_rows: result rows the client
 * must print (-1: do not count). Returns the client's exit status.
 */
static int pair_run(const char *const *client_args, int want_rows)
{
	struct child srv = { .out = -1 }, cli = { .out = -1 };
	const char *argv[MAX_ARGS], *args[MAX_ARGS];
	char port[16];
	int n = 0, port_no, st_c = -1, st_s = -1, rc_c, rc_s;

	port_no = server_start(&srv, NULL);
	if (port_no <= 0) {
		test_fail(__FILE__, __LINE__, "server did not start (%d)", port_no);
		return -1;
	}
	snprintf(port, sizeof(port), "%d", port_no);
	args[n++] = "-p";
	args[n++] = port;
	for (const char *const *a = client_args; *a && n < MAX_ARGS - 2; a++)
		args[n++] = *a;
	args[n++] = test_addr();
	args[n] = NULL;
	build_argv(argv, args);
	if (spawn(argv, 1, false, cli_out, cli_err, &cli) < 0) {
		test_fail(__FILE__, __LINE__, "cannot start the client");
		kill(srv.pid, SIGKILL);
		reap(&srv, SERVER_EXIT_MS, &st_s);
		return -1;
	}
	rc_c = reap(&cli, CLIENT_MS, &st_c);
	rc_s = reap(&srv, SERVER_EXIT_MS, &st_s);
	bool ok = !rc_c && !rc_s && WIFEXITED(st_c) && WEXITSTATUS(st_c) == 0 && WIFEXITED(st_s) &&
		  WEXITSTATUS(st_s) == 0;
	int rows = 0;
	if (ok && want_rows >= 0) {
		/* a result row starts with the size: " 64      ..." */
		FILE *f = fopen(cli_out, "r");
		char line[512];
		while (f && fgets(line, sizeof(line), f))
			rows += line[0] == ' ' && line[1] >= '0' && line[1] <= '9';
		if (f)
			fclose(f);
		ok = rows == want_rows;
	}
	if (!ok) {
		show_file("client stdout", cli_out);
		show_file("client stderr", cli_err);
		show_file("server stderr", srv_err);
		test_fail(__FILE__, __LINE__,
			  "client %s status %d, server %s status %d, %d rows (want %d)",
			  rc_c ? "timed out," : "exit", WIFEXITED(st_c) ? WEXITSTATUS(st_c) : -1,
			  rc_s ? "timed out," : "exit", WIFEXITED(st_s) ? WEXITSTATUS(st_s) : -1,
			  rows, want_rows);
		return -1;
	}
	return 0;
}

#define RUN(rows, ...)                                                 \
	do {                                                           \
		static const char *const a_[] = { __VA_ARGS__, NULL }; \
		if (pair_run(a_, rows))                                \
			return;                                        \
	} while (0)

static void latency_every_op(void) { RUN(6, "--lat", "--test", "all", "-s", "64", "-n", "50"); }

static void bandwidth_every_op(void) { RUN(6, "--bw", "--test", "all", "-s", "4096", "-n", "200"); }

static void all_sizes(void)
{
	/* 23 sizes of send and write, latency and bandwidth */
	RUN(92, "-a", "--test", "send,write", "-n", "4", "--warmup", "1");
}

static void blocking_completions(void)
{
	/* write latency watches memory and is skipped with -e */
	RUN(9, "-e", "--test", "send,write,write_imm,read,cas", "-s", "256", "-n", "40");
}

static void epoll_completions(void)
{
	RUN(8, "--cq-mode", "fd", "--test", "send,write_imm,read,fadd", "-s", "256", "-n", "40");
}

static void hybrid_completions(void)
{
	RUN(8, "-m", "hybrid", "--test", "send,write_imm,read,fadd", "-s", "256", "-n", "40");
	RUN(2, "-m", "hybrid", "--bw", "-q", "2", "--test", "send,read", "-s", "4096", "-n", "100");
}

static void bidirectional(void)
{
	RUN(4, "-b", "--bw", "--test", "send,write,write_imm,read", "-s", "1024", "-n", "200");
	/* 40 DONEs each way at once, more than the control channel's credits,
	 * and few receives: a side whose DONEs wait for credits must go on
	 * taking the peer's data and DONEs */
	RUN(2, "-b", "--bw", "-q", "40", "-t", "16", "-r", "16", "--test", "write,send", "-s", "64",
	    "-n", "20");
}

static void endpoints_post_lists_moderation(void)
{
	RUN(6, "--bw", "--test", "all", "-q", "3", "-l", "4", "-Q", "8", "-t", "32", "-s", "512",
	    "-n", "96");
}

static void validate_everything(void)
{
	RUN(12, "--validate", "--test", "all", "-s", "1000", "-n", "60");
	RUN(4, "--validate", "--bw", "-b", "-q", "2", "-l", "3", "-Q", "2", "-t", "16", "--test",
	    "send,write,write_imm,read", "-s", "300", "-n", "50");
	/* at 8 MiB only 4 buffers fit: lists and moderation shrink to match */
	RUN(69, "--validate", "-a", "--bw", "--test", "send,write,read", "-n", "4", "-l", "8",
	    "--warmup", "1");
}

/* -c UC alone runs what UC carries: send, write and write_imm, both kinds,
 * every byte checked (perftest's upper case and rcc's lower case alike). */
static void unreliable_connected(void)
{
	RUN(6, "-c", "UC", "--validate", "-s", "256", "-n", "40");
	RUN(2, "-c", "uc", "--bw", "-q", "2", "--test", "send,write_imm", "-s", "1024", "-n",
	    "100");
}

/* -c UD: send latency and bandwidth over datagram endpoints, every byte
 * checked; -a stops at what one datagram carries (2 B .. 4 KiB on tcp:
 * 12 sizes, both kinds); several endpoints, each paired by its own address
 * exchange. */
static void datagrams(void)
{
	RUN(2, "-c", "UD", "--validate", "-s", "256", "-n", "40");
	RUN(2, "-c", "ud", "-m", "wait", "-s", "1024", "-n", "100");
	if (!test_on_verbs())
		RUN(24, "-c", "UD", "-a", "-n", "4", "--warmup", "1");
	RUN(1, "-c", "UD", "--bw", "-q", "3", "-s", "512", "-n", "100", "--validate");
}

static void duration_mode(void) { RUN(4, "-D", "0.2", "--test", "send,read"); }

static void inline_off_and_target_poll(void)
{
	RUN(2, "-I", "0", "--lat", "--test", "send,write", "-s", "16", "-n", "50");
	RUN(4, "--target-poll", "--test", "write,read", "-s", "4096", "-n", "50");
}

static void json_csv_plot(void)
{
	char json[160], csv[160], plot[160], png[200];
	bool gnuplot = access("/usr/bin/gnuplot", X_OK) == 0;

	snprintf(json, sizeof(json), "%s/out.json", tmpdir);
	snprintf(csv, sizeof(csv), "%s/out.csv", tmpdir);
	snprintf(plot, sizeof(plot), "%s/plots", tmpdir);
	{
		const char *const a[] = { "--test",
					  "write,read",
					  "-s",
					  "64",
					  "-n",
					  "30",
					  "--json",
					  json,
					  "--csv",
					  csv,
					  gnuplot ? "--plot" : "--quiet",
					  gnuplot ? plot : "--quiet",
					  NULL };
		if (pair_run(a, -1))
			return;
	}
	CHECK_EQ(count_in_file(json, "\"results\""), 1);
	CHECK_EQ(count_in_file(json, "\"t_typical_us\""), 2);
	CHECK_EQ(count_in_file(json, "\"bw_avg_MBps\""), 2);
	CHECK_EQ(count_in_file(csv, ","), 5); /* header + 4 points */
	CHECK_EQ(count_in_file(csv, "test,kind,size_B"), 1);
	if (gnuplot) {
		snprintf(png, sizeof(png), "%s/bw.png", plot);
		CHECK(access(png, R_OK) == 0);
		snprintf(png, sizeof(png), "%s/lat-read.png", plot);
		CHECK(access(png, R_OK) == 0);
	}
}

/* Nothing listens there: a clean error, at once. */
static void refused_and_bad_options(void)
{
	const char *argv[MAX_ARGS];
	const char *args1[] = { "-p", "1", test_addr(), NULL };
	const char *args2[] = { "-s", "0", test_addr(), NULL };
	const char *args3[] = { "-c", "UC", "--test", "send,read", test_addr(), NULL };
	struct child c = { .out = -1 };
	int st;

	build_argv(argv, args1);
	CHECK_OK(spawn(argv, 1, false, cli_out, cli_err, &c));
	CHECK_OK(reap(&c, 10000, &st));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	CHECK(count_in_file(cli_err, "connecting to") == 1);
	if (test_transport() == RCC_TRANSPORT_TCP)
		CHECK(count_in_file(cli_err, "refused") == 1);
	build_argv(argv, args2);
	CHECK_OK(spawn(argv, 1, false, cli_out, cli_err, &c));
	CHECK_OK(reap(&c, 10000, &st));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2);
	/* READ over UC: a usage error naming the cure, before any connection */
	build_argv(argv, args3);
	CHECK_OK(spawn(argv, 1, false, cli_out, cli_err, &c));
	CHECK_OK(reap(&c, 10000, &st));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2);
	CHECK_EQ(count_in_file(cli_err, "READ and atomics need -c RC"), 1);
}

/* The server dies in the middle: the client says so and exits 1, never hangs. */
static void peer_dies(void)
{
	struct child srv = { .out = -1 }, cli = { .out = -1 };
	const char *argv[MAX_ARGS];
	char port[16], buf[4096];
	int st;
	int p = server_start(&srv, NULL);

	CHECK(p > 0);
	snprintf(port, sizeof(port), "%d", p);
	const char *args[] = {
		"-p", port, "-D", "20", "--test", "write", "--lat", test_addr(), NULL
	};
	build_argv(argv, args);
	CHECK_OK(spawn(argv, 1, true, NULL, cli_err, &cli));
	bool started = read_until(&cli, "#bytes", buf, sizeof(buf), 10000);
	kill(srv.pid, SIGKILL);
	reap(&srv, SERVER_EXIT_MS, &st);
	CHECK(started);
	CHECK_OK(reap(&cli, 20000, &st));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	CHECK(count_in_file(cli_err, "lost") >= 1 || count_in_file(cli_err, "progress") >= 1);
}

/* Connect with private data pd; the server's reject words into why. */
static int fake_connect(struct rcc_ctx *ctx, const char *addr, struct rcc_cq *cq, const void *pd,
			size_t len, struct rcc_ep **ep, char *why, size_t whylen)
{
	struct rcc_ep_attr a = { .send_cq = cq, .private_data = pd, .private_data_len = len };
	uint8_t rej[RCC_REJECT_PRIVATE_DATA_MAX];
	size_t rej_len = 0;

	int rc = rcc_connect_ex(ctx, addr, &a, TEST_TIMEOUT_MS, ep, rej, &rej_len);
	snprintf(why, whylen, "%.*s", (int)rej_len, (const char *)rej);
	return rc;
}

/* What a hand-made client needs: a server started with extra options, its
 * address, a context and a CQ, and the hello of a short latency plan. */
struct fake_client {
	struct child srv;
	int port;
	char addr[128];
	uint8_t params[PERF_PARAMS_WIRE_LEN];
	struct rcc_ctx *ctx;
	struct rcc_cq *cq;
};

/* f->cq is set once everything is (check it); fake_client_end() frees them. */
static void fake_client_start(struct fake_client *f, uint32_t cookie, const char *const *extra)
{
	struct perf_config cfg;
	char *pargv[] = {
		"rcc-perf", "--lat", "--test", "send", "-s", "64", "-n", "10", "x", NULL
	};
	struct rcc_cq_attr ca = { .depth = 64 };

	memset(f, 0, sizeof(*f));
	f->srv.out = -1;
	memset(&cfg, 0, sizeof(cfg));
	perf_parse(9, pargv, &cfg);
	cfg.p.cookie = cookie;
	params_encode(&cfg.p, f->params);
	f->port = server_start(&f->srv, extra);
	CHECK(f->port > 0);
	snprintf(f->addr, sizeof(f->addr), "%s:%d", test_addr(), f->port);
	CHECK_OK(test_ctx_open(&f->ctx));
	CHECK_OK(rcc_cq_create(f->ctx, &ca, &f->cq));
}

static void fake_client_end(struct fake_client *f)
{
	rcc_cq_destroy(f->cq);
	rcc_ctx_close(f->ctx);
}

/* A real client (10 latency round trips) against port: its exit status, or
 * -1 when it could not be run or did not end within CLIENT_MS. */
static int real_client(int port)
{
	char portstr[16];
	const char *argv[MAX_ARGS];
	struct child cli = { .out = -1 };
	int st;

	snprintf(portstr, sizeof(portstr), "%d", port);
	const char *args[] = { "-p", portstr, "--lat", "-n", "10", test_addr(), NULL };
	build_argv(argv, args);
	if (spawn(argv, 1, false, cli_out, cli_err, &cli) < 0 || reap(&cli, CLIENT_MS, &st))
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * While the server waits for a client's data connections, a forged one (a
 * wrong run cookie) and a second client are turned away with the reason; the
 * session goes on and takes the right data connection.
 */
static void stray_data_connection_turned_away(void)
{
	struct fake_client f;
	uint8_t hello[PERF_DATA_HELLO_LEN];
	struct rcc_ep *ctrl = NULL, *stray = NULL, *other = NULL, *data = NULL;
	struct tbuf area = { 0 };
	char why[RCC_REJECT_PRIVATE_DATA_MAX + 1];
	int st;

	/* this session waits while a whole client runs: no set-up deadline here */
	const char *const extra[] = { "--setup-timeout", "10m", NULL };
	fake_client_start(&f, 0x5eed1234, extra);
	CHECK(f.cq != NULL);
	CHECK_OK(tbuf_alloc(&area, f.ctx, 1u << 20,
			    RCC_ACCESS_LOCAL_WRITE | RCC_ACCESS_REMOTE_WRITE |
				    RCC_ACCESS_REMOTE_READ));
	CHECK_OK(fake_connect(f.ctx, f.addr, f.cq, f.params, sizeof(f.params), &ctrl, why,
			      sizeof(why)));

	/* the server now waits for data connection 0 */
	struct rcc_remote_mr mr = rcc_mr_remote(area.mr);
	data_hello_encode(0x0badc0de, 0, &mr, hello);
	CHECK_EQ(fake_connect(f.ctx, f.addr, f.cq, hello, sizeof(hello), &stray, why, sizeof(why)),
		 -ECONNABORTED);
	CHECK(strstr(why, "another run") != NULL);
	CHECK_EQ(fake_connect(f.ctx, f.addr, f.cq, f.params, sizeof(f.params), &other, why,
			      sizeof(why)),
		 -ECONNABORTED);
	CHECK(strstr(why, "busy") != NULL);
	/* a real client is told the same, in the server's words */
	CHECK_EQ(real_client(f.port), 1);
	CHECK_EQ(count_in_file(cli_err,
			       "the server rejected the connection: busy with another client"),
		 1);
	data_hello_encode(0x5eed1234, 0, &mr, hello);
	CHECK_OK(fake_connect(f.ctx, f.addr, f.cq, hello, sizeof(hello), &data, why, sizeof(why)));

	/* leaving now ends the session on the server's side: it exits, never hangs */
	rcc_ep_close(data);
	rcc_ep_close(ctrl);
	CHECK_OK(reap(&f.srv, SERVER_EXIT_MS, &st));
	CHECK(WIFEXITED(st));
	CHECK_EQ(count_in_file(srv_err, "turning away"), 3);
	tbuf_free(&area);
	fake_client_end(&f);
}

/*
 * A client of wire protocol 1 (its control messages without the message
 * channel's header) is turned away at connect time, in the server's words,
 * and the server goes on to serve a client of its own version.
 */
static void older_version_refused(void)
{
	struct fake_client f;
	struct rcc_ep *ctrl = NULL;
	char why[RCC_REJECT_PRIVATE_DATA_MAX + 1];
	int st;

	fake_client_start(&f, 0x5eed0001, NULL);
	CHECK(f.cq != NULL);
	f.params[2] = 1; /* the version byte */
	CHECK_EQ(fake_connect(f.ctx, f.addr, f.cq, f.params, sizeof(f.params), &ctrl, why,
			      sizeof(why)),
		 -ECONNABORTED);
	CHECK(strstr(why, "another rcc-perf version") != NULL);
	if (ctrl)
		rcc_ep_close(ctrl);
	st = real_client(f.port);
	if (st)
		show_file("client stderr", cli_err);
	CHECK_EQ(st, 0);
	CHECK_OK(reap(&f.srv, SERVER_EXIT_MS, &st));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	fake_client_end(&f);
}

/* How long a (polled) file takes to contain what, at most ms; -1 if never. */
static long ms_until_in_file(const char *path, const char *what, int ms)
{
	uint64_t t0 = now_ms();

	while (count_in_file(path, what) < 1) {
		if (now_ms() - t0 > (uint64_t)ms)
			return -1;
		usleep(10000); /* polling a file, not synchronising */
	}
	return (long)(now_ms() - t0);
}

/*
 * A client that sends a valid hello (its control connection is accepted) and
 * then opens no data connection holds this one-client server only until the
 * set-up deadline (--setup-timeout, 1 s here; 5 s by default), not for the
 * 15 s --timeout: the server drops it, says so, and serves the next client.
 */
static void hello_then_silence_dropped(void)
{
	struct fake_client f;
	struct rcc_ep *ctrl = NULL;
	char why[RCC_REJECT_PRIVATE_DATA_MAX + 1];
	int st;

	const char *const extra[] = { "--persistent", "--setup-timeout", "1s", NULL };
	fake_client_start(&f, 0x5eed4321, extra);
	CHECK(f.cq != NULL);
	CHECK_OK(fake_connect(f.ctx, f.addr, f.cq, f.params, sizeof(f.params), &ctrl, why,
			      sizeof(why)));
	/* 1 s deadline; 4 s of slack for a loaded host, well under the 15 s
	 * a session without the deadline would hold the server */
	long took = ms_until_in_file(srv_err, "within the set-up deadline", 5000);
	CHECK_MSG(took >= 0, "the server still held the silent client after 5 s");
	st = real_client(f.port);
	if (st)
		show_file("client stderr", cli_err);
	CHECK_EQ(st, 0);
	rcc_ep_close(ctrl);
	kill(f.srv.pid, SIGTERM);
	CHECK_OK(reap(&f.srv, SERVER_EXIT_MS, &st));
	fake_client_end(&f);
}

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/rcc-perf-smoke.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		exit(1);
	}
	snprintf(srv_err, sizeof(srv_err), "%s/server.err", tmpdir);
	snprintf(cli_out, sizeof(cli_out), "%s/client.out", tmpdir);
	snprintf(cli_err, sizeof(cli_err), "%s/client.err", tmpdir);
}

static void cleanup(void)
{
	char cmd[200];

	/* only our own scratch folder */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", tmpdir);
}

static const struct test_case cases[] = {
	TEST(latency_every_op),
	TEST(bandwidth_every_op),
	TEST(all_sizes),
	TEST(blocking_completions),
	TEST(epoll_completions),
	TEST(hybrid_completions),
	TEST(bidirectional),
	TEST(endpoints_post_lists_moderation),
	TEST(validate_everything),
	TEST(unreliable_connected),
	TEST(datagrams),
	TEST(duration_mode),
	TEST(inline_off_and_target_poll),
	TEST(json_csv_plot),
	TEST(refused_and_bad_options),
	TEST(peer_dies),
	TEST(stray_data_connection_turned_away),
	TEST(hello_then_silence_dropped),
	TEST(older_version_refused),
};

int main(int argc, char **argv)
{
	int rc;

	signal(SIGPIPE, SIG_IGN);
	setup();
	rc = test_main(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
	cleanup();
	return rc;
}
