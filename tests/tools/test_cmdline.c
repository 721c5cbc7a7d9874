/* SPDX-License-Identifier: BSD-3-Clause */
/* The tools' shared command-line grammar (tools/common/cmdline.c): durations, the
 * common option table, its messages and exit codes. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmdline.h"
#include "harness.h"
#include "opts.h"

static void durations(void)
{
	static const struct {
		const char *s;
		uint64_t ms;
		bool bare;
	} good[] = {
		{ "500ms", 500, false }, { "5s", 5000, false },    { "1.5s", 1500, false },
		{ "2m", 120000, false }, { "1h", 3600000, false }, { "0.2", 200, true },
		{ "5", 5000, true },     { "0", 0, true },         { "0.0005s", 1, false },
		{ "1.", 1000, true },    { ".5", 500, true },      { "10000ms", 10000, false },
	};
	static const char *bad[] = { "",      "s",           "ms",   "-1",  "+1",   "5x",
				     "1e3",   "0x10",        "inf",  "5 s", " 5",   "0.0001s",
				     "1.5.2", "9999999999h", "367d", "1S",  "5sec", "." };
	uint64_t ms = 7;
	bool bare;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		CHECK_MSG(parse_duration(good[i].s, &ms, &bare) == 0, "'%s' refused", good[i].s);
		CHECK_MSG(ms == good[i].ms && bare == good[i].bare, "'%s' gave %llu ms%s",
			  good[i].s, (unsigned long long)ms, bare ? " (bare)" : "");
	}
	ms = 7;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_MSG(parse_duration(bad[i], &ms, NULL) == -EINVAL, "'%s' accepted", bad[i]);
	CHECK_EQ(ms, 7); /* untouched on failure */
}

/* A tool with one option of its own (-n N) and one long-only (--once). */
enum {
	OPT_ONCE = CLI_OPT_TOOL
};
static const struct option tool_longs[] = {
	{ "iters", required_argument, NULL, 'n' },
	{ "once", no_argument, NULL, OPT_ONCE },
	{ NULL, 0, NULL, 0 },
};

static void tool_help(const struct cli *c)
{
	printf("Usage: %s [OPTION]... [HOST[:PORT]]\n\n", c->prog);
	cli_help_common(c, stdout);
}

static struct rcc_ctx_attr ctx;
static long iters;
static bool once;

static void init(struct cli *c, unsigned take)
{
	memset(c, 0, sizeof(*c));
	memset(&ctx, 0, sizeof(ctx));
	c->prog = "rcc-test";
	c->take = take;
	c->shorts = "n:";
	c->longs = tool_longs;
	c->help = tool_help;
	c->ctx = &ctx;
	c->mode = RCC_CQ_WAIT;
	c->port = 7471;
	c->timeout_ms = 10000;
	iters = 0;
	once = false;
}

/* Parse a NULL-terminated argument list in this process; returns optind. */
static int parse(struct cli *c, const char *const *args)
{
	char *argv[32];
	int argc = 0, r;

	argv[argc++] = (char *)"rcc-test";
	for (; *args; args++)
		argv[argc++] = (char *)*args;
	argv[argc] = NULL;
	optind = 0; /* glibc: start over */
	while ((r = cli_next(c, argc, argv)) != -1) {
		if (r == 'n')
			iters = atol(optarg);
		else if (r == OPT_ONCE)
			once = true;
		else
			return -1000 - r;
	}
	cli_finish(c);
	return optind;
}

static void common_options(void)
{
	struct cli c;
	const char *a[] = { "-T", "verbs", "-T",        "verbs",  "-i",     "2",
			    "-g", "0",     "-B",        "manual", "-m",     "fd",
			    "-p", "99",    "--timeout", "1.5s",   "--json", "--quiet",
			    "-n", "5",     "host:1",    "--once", NULL };

	init(&c, CLI_VERBS | CLI_MODE | CLI_PORT | CLI_TIMEOUT | CLI_JSON | CLI_QUIET);
	CHECK_EQ(parse(&c, a), 22); /* the operand, permuted to the end */
	CHECK_EQ(ctx.transport, RCC_TRANSPORT_VERBS);
	CHECK_EQ(ctx.port, 2);
	CHECK_EQ(ctx.gid_index, RCC_GID_INDEX_ZERO);
	CHECK_EQ(ctx.bringup, RCC_BRINGUP_MANUAL);
	CHECK_EQ(c.mode, RCC_CQ_FD);
	CHECK_EQ(c.port, 99);
	CHECK_EQ(c.timeout_ms, 1500);
	CHECK(c.json && c.quiet && once);
	CHECK_EQ(iters, 5);
}

static void long_forms_and_aliases(void)
{
	struct cli c;
	const char *a[] = { "--transport=tcp", "--cq-mode", "poll", "--port=0",
			    "--timeout=250ms", "--iters=3", NULL };

	init(&c, CLI_VERBS | CLI_MODE | CLI_PORT | CLI_TIMEOUT);
	CHECK_EQ(parse(&c, a), 7);
	CHECK_EQ(ctx.transport, RCC_TRANSPORT_TCP);
	CHECK_EQ(c.mode, RCC_CQ_POLL);
	CHECK_EQ(c.port, 0);
	CHECK_EQ(c.timeout_ms, 250);
	CHECK_EQ(iters, 3);
	CHECK_EQ(c.qp_type, RCC_QP_RC); /* -c not taken, not given: RC */
}

static void connection_type(void)
{
	struct cli c;
	const char *a[] = { "-c", "UC", NULL }, *b[] = { "--connection=rc", NULL };

	init(&c, CLI_VERBS | CLI_QP_TYPE);
	CHECK_EQ(parse(&c, a), 3);
	CHECK_EQ(c.qp_type, RCC_QP_UC);
	init(&c, CLI_VERBS | CLI_QP_TYPE);
	CHECK_EQ(parse(&c, b), 2);
	CHECK_EQ(c.qp_type, RCC_QP_RC);
}

/* (Without CLI_TRANSPORT: a tool that opens no transport does not look the
 * device up, so this runs on a machine without it.) */
static void device_implies_verbs(void)
{
	struct cli c;
	const char *a[] = { "-d", "rxe0", NULL };

	init(&c, CLI_DEVICE);
	CHECK_EQ(parse(&c, a), 3);
	CHECK(!strcmp(ctx.device, "rxe0"));
	CHECK_EQ(ctx.transport, RCC_TRANSPORT_VERBS);
}

static void legacy_milliseconds(void)
{
	struct cli c;
	const char *ms[] = { "--timeout", "3000", NULL };
	const char *s[] = { "--timeout", "5", NULL };
	const char *unit[] = { "--timeout", "300s", NULL };

	init(&c, CLI_TIMEOUT);
	c.timeout_legacy_ms = true;
	CHECK_EQ(parse(&c, ms), 3);
	CHECK_EQ(c.timeout_ms, 3000); /* what it meant when it took milliseconds */
	CHECK_EQ(parse(&c, s), 3);
	CHECK_EQ(c.timeout_ms, 5000); /* small bare numbers are seconds */
	CHECK_EQ(parse(&c, unit), 3);
	CHECK_EQ(c.timeout_ms, 300000); /* a unit is never reinterpreted */
	init(&c, CLI_TIMEOUT);
	CHECK_EQ(parse(&c, ms), 3);
	CHECK_EQ(c.timeout_ms, 3000000); /* without the legacy flag: seconds */
}

/*
 * Run a parse in a child (usage errors exit); returns its exit status and
 * what it wrote on stdout and stderr (together) in out.
 */
static int run(unsigned take, const char *fd_refused, const char *const *args, char *out,
	       size_t len)
{
	int p[2], st;
	ssize_t n, got = 0;
	pid_t pid;

	if (pipe(p))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		struct cli c;
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		init(&c, take);
		c.fd_refused = fd_refused;
		_exit(parse(&c, args) < 0 ? 99 : 0);
	}
	close(p[1]);
	while ((n = read(p[0], out + got, len - 1 - (size_t)got)) > 0)
		got += n;
	out[got] = 0;
	close(p[0]);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

#define EXPECT_RUN(take, refused, status, text, ...)                                            \
	do {                                                                                    \
		const char *a_[] = { __VA_ARGS__, NULL };                                       \
		char o_[4096];                                                                  \
		int st_ = run(take, refused, a_, o_, sizeof(o_));                               \
		CHECK_MSG(st_ == (status), "%s: exit %d, expected %d; output:\n%s", a_[0], st_, \
			  status, o_);                                                          \
		CHECK_MSG(strstr(o_, text), "%s: no '%s' in:\n%s", a_[0], text, o_);            \
	} while (0)

static void usage_errors(void)
{
	const unsigned all = CLI_VERBS | CLI_MODE | CLI_PORT | CLI_TIMEOUT | CLI_JSON;

	EXPECT_RUN(all, NULL, 2,
		   "rcc-test: the completion mode (-m) must be poll, wait, fd or hybrid, "
		   "not 'busy'",
		   "-m", "busy");
	EXPECT_RUN(all, NULL, 2, "not perftest's MTU", "-m", "1024");
	EXPECT_RUN(all, "the CQ has no descriptor here", 2,
		   "-m fd is not available here: the CQ has no descriptor here", "-m", "fd");
	EXPECT_RUN(all, NULL, 2, "--timeout: bad duration '5x'", "--timeout", "5x");
	EXPECT_RUN(all, NULL, 2, "--timeout: '0' is out of range", "--timeout", "0");
	EXPECT_RUN(all, NULL, 2, "unknown option '--frobnicate'", "--frobnicate");
	EXPECT_RUN(all, NULL, 2, "unknown option -z", "-z");
	EXPECT_RUN(all, NULL, 2, "option -T needs a value", "-T");
	EXPECT_RUN(all, NULL, 2, "option '--transport' needs a value", "--transport");
	EXPECT_RUN(all, NULL, 2, "the transport must be auto, verbs or tcp, not 'ib'", "-T", "ib");
	EXPECT_RUN(all, NULL, 2, "the port (-p) must be 0..65535, not '65536'", "-p", "65536");
	EXPECT_RUN(all, NULL, 2, "-d mlx5_0 names an RDMA device, which the tcp transport", "-T",
		   "tcp", "-d", "mlx5_0");
	EXPECT_RUN(all, NULL, 2, "Try 'rcc-test --help'.", "--bogus");
	/* not a usage error: the system lacks it; exit 1 before anything starts */
	EXPECT_RUN(all, NULL, 1, "rcc-test: no RDMA device named 'nosuchdev0'", "-d", "nosuchdev0");
	/* an option the tool does not take is unknown, not silently accepted */
	EXPECT_RUN(CLI_TRANSPORT, NULL, 2, "unknown option '--json'", "--json");
	EXPECT_RUN(CLI_TRANSPORT, NULL, 2, "unknown option -m", "-m", "poll");
	EXPECT_RUN(CLI_VERBS | CLI_QP_TYPE, NULL, 2,
		   "rcc-test: the connection type (-c) must be RC, UC or UD, not 'xrc'", "-c",
		   "xrc");
	/* UD is taken (either case): the run goes on to the missing device */
	EXPECT_RUN(CLI_VERBS | CLI_QP_TYPE, NULL, 1, "no RDMA device named 'nosuchdev0'", "-c",
		   "ud", "-d", "nosuchdev0");
	EXPECT_RUN(CLI_TRANSPORT, NULL, 2, "unknown option -c", "-c", "uc");
	EXPECT_RUN(CLI_VERBS | CLI_QP_TYPE, NULL, 0, "  -c, --connection TYPE", "-h");
}

static void help_and_version(void)
{
	EXPECT_RUN(CLI_VERBS | CLI_MODE | CLI_TIMEOUT, NULL, 0, "Usage: rcc-test", "--help");
	EXPECT_RUN(CLI_VERBS | CLI_MODE | CLI_TIMEOUT, NULL, 0, "  -m, --mode M", "-h");
	EXPECT_RUN(CLI_VERBS | CLI_MODE | CLI_TIMEOUT, NULL, 0, "(wait)", "-h");
	EXPECT_RUN(CLI_VERBS | CLI_MODE | CLI_TIMEOUT, NULL, 0, "TIME is a number and a unit",
		   "-h");
	EXPECT_RUN(CLI_VERBS, NULL, 0, "rcc-test (rcc) ", "--version");
	EXPECT_RUN(CLI_VERBS, NULL, 0, "rcc-test (rcc) ", "-V");
}

static void help_lists_what_is_taken(void)
{
	struct cli c;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CHECK(f);
	init(&c, CLI_DEVICE | CLI_JSON);
	cli_help_common(&c, f);
	fclose(f);
	CHECK(strstr(buf, "-d, --device DEV"));
	CHECK(strstr(buf, "    --json"));
	CHECK(!strstr(buf, "--transport") && !strstr(buf, "--mode") && !strstr(buf, "--timeout"));
	free(buf);
}

TEST_MAIN(TEST(durations), TEST(common_options), TEST(long_forms_and_aliases),
	  TEST(connection_type), TEST(device_implies_verbs), TEST(legacy_milliseconds),
	  TEST(usage_errors), TEST(help_and_version), TEST(help_lists_what_is_taken))
