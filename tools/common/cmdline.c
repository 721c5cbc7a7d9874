/* SPDX-License-Identifier: BSD-3-Clause */
#include "cmdline.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "opts.h"

/* One row per common option: how it is spelt and how --help shows it. */
struct common_opt {
	unsigned take; /* CLI_* bit */
	int code;      /* short letter, or CLI_OPT_* */
	const char *name;
	int has_arg;
	const char *arg; /* the value's name in --help */
	const char *help;
};

static const struct common_opt common[] = {
	{ CLI_TRANSPORT, 'T', "transport", required_argument, "T",
	  "auto | verbs | tcp (auto: verbs if a device exists)" },
	{ CLI_DEVICE, 'd', "device", required_argument, "DEV",
	  "RDMA device (first active); implies -T verbs" },
	{ CLI_IB_PORT, 'i', "ib-port", required_argument, "N", "device port (first active)" },
	{ CLI_GID, 'g', "gid-index", required_argument, "N",
	  "GID index (the RoCE v2 GID of an IPv4 address)" },
	{ CLI_BRINGUP, 'B', "bringup", required_argument, "cm|manual",
	  "verbs set-up: rdma_cm, or QP data over TCP (cm)" },
	{ CLI_MODE, 'm', "mode", required_argument, "M",
	  "poll (spin), wait (sleep), fd (epoll) or hybrid (spin, then sleep)" },
	{ CLI_PORT, 'p', "port", required_argument, "PORT", "service port" },
	{ CLI_QP_TYPE, 'c', "connection", required_argument, "TYPE",
	  "RC (reliable connected), UC (unreliable connected: SEND and WRITE only) or UD "
	  "(datagrams: SEND only, one MTU each), either case; both sides must use the same" },
	{ CLI_TIMEOUT, CLI_OPT_TIMEOUT, "timeout", required_argument, "TIME", NULL },
	{ CLI_JSON, CLI_OPT_JSON, "json", no_argument, NULL,
	  "print the results as JSON on stdout (docs/json.md)" },
	{ CLI_QUIET, CLI_OPT_QUIET, "quiet", no_argument, NULL, "fewer messages" },
};
#define NCOMMON (sizeof(common) / sizeof(common[0]))

/* Accepted spellings that --help does not list (the same meaning, older names). */
static const struct {
	unsigned take;
	const char *name;
	int code;
} aliases[] = {
	{ CLI_MODE, "cq-mode", 'm' },
};

static void add_long(struct cli *c, size_t *n, const char *name, int has_arg, int code)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp(c->all_longs[i].name, name)) {
			/* Two meanings for one name: a bug in the tool, caught by any run. */
			fprintf(stderr, "%s: option --%s defined twice\n", c->prog, name);
			abort();
		}
	if (*n + 1 >= sizeof(c->all_longs) / sizeof(c->all_longs[0]))
		abort();
	c->all_longs[(*n)++] = (struct option){ name, has_arg, NULL, code };
	c->all_longs[*n] = (struct option){ 0 };
}

static void add_short(struct cli *c, int letter, int has_arg)
{
	size_t n = strlen(c->all_shorts);

	if (strchr(c->all_shorts + 1, letter)) {
		fprintf(stderr, "%s: option -%c defined twice\n", c->prog, letter);
		abort();
	}
	if (n + 3 >= sizeof(c->all_shorts))
		abort();
	c->all_shorts[n++] = (char)letter;
	if (has_arg == required_argument)
		c->all_shorts[n++] = ':';
	c->all_shorts[n] = 0;
}

/* The merged tables, once: the tool's own options, then the common ones. */
static void build(struct cli *c)
{
	size_t n = 0;

	/* ':' first: getopt reports a missing value as ':' and prints nothing. */
	snprintf(c->all_shorts, sizeof(c->all_shorts), ":%s", c->shorts ? c->shorts : "");
	c->all_longs[0] = (struct option){ 0 };
	for (const struct option *o = c->longs; o && o->name; o++)
		add_long(c, &n, o->name, o->has_arg, o->val);
	for (size_t i = 0; i < NCOMMON; i++) {
		if (!(c->take & common[i].take))
			continue;
		add_long(c, &n, common[i].name, common[i].has_arg, common[i].code);
		if (common[i].code < 256)
			add_short(c, common[i].code, common[i].has_arg);
	}
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (c->take & aliases[i].take)
			add_long(c, &n, aliases[i].name, required_argument, aliases[i].code);
	add_long(c, &n, "help", no_argument, 'h');
	add_long(c, &n, "version", no_argument, CLI_OPT_VERSION);
	add_short(c, 'h', no_argument);
	add_short(c, 'V', no_argument);
	c->ready = true;
}

static const struct common_opt *common_by_code(const struct cli *c, int code)
{
	for (size_t i = 0; i < NCOMMON; i++)
		if (common[i].code == code && (c->take & common[i].take))
			return &common[i];
	return NULL;
}

static void set_mode(struct cli *c, const char *arg)
{
	enum rcc_cq_mode m;

	if (parse_cq_mode(arg, &m))
		usage_error(c->prog,
			    "the completion mode (-m) must be poll, wait, fd or hybrid, not '%s'%s",
			    arg,
			    all_digits(arg) ? " (-m is not perftest's MTU: rcc uses the port's "
					      "active MTU, which rcc-info shows)" :
					      "");
	if (m == RCC_CQ_FD && c->fd_refused)
		usage_error(c->prog, "-m fd is not available here: %s", c->fd_refused);
	c->mode = m;
}

static void set_qp_type(struct cli *c, const char *arg)
{
	if (parse_qp_type(arg, &c->qp_type))
		usage_error(c->prog, "the connection type (-c) must be RC, UC or UD, not '%s'",
			    arg);
}

void cli_apply(struct cli *c, int code, const char *arg)
{
	long v;

	switch (code) {
	case 'T':
		opt_transport(c->prog, arg, c->ctx);
		break;
	case 'd':
		if (!*arg)
			usage_error(c->prog, "the device name (-d) is empty");
		c->ctx->device = arg;
		break;
	case 'i':
		opt_ib_port(c->prog, arg, c->ctx);
		break;
	case 'g':
		opt_gid_index(c->prog, arg, c->ctx);
		break;
	case 'B':
		opt_bringup(c->prog, arg, c->ctx);
		break;
	case 'm':
		set_mode(c, arg);
		break;
	case 'c':
		set_qp_type(c, arg);
		break;
	case 'p':
		if (parse_int(arg, 0, 65535, &v))
			usage_error(c->prog, "the port (-p) must be 0..65535, not '%s'", arg);
		c->port = (int)v;
		break;
	case CLI_OPT_TIMEOUT:
		c->timeout_ms = (int)cli_duration(c, "--timeout", arg, 1, 86400000,
						  c->timeout_legacy_ms);
		break;
	case CLI_OPT_JSON:
		c->json = true;
		break;
	case CLI_OPT_QUIET:
		c->quiet = true;
		break;
	default:
		abort(); /* not a common option: a bug in the tool */
	}
}

/* argv[optind - 1] is the option getopt stopped at; name it as the user wrote it. */
static void bad_option(const struct cli *c, int r, char **argv)
{
	const char *word = argv[optind - 1];

	if (r == ':') {
		if (word[0] == '-' && word[1] == '-')
			usage_error(c->prog, "option '%s' needs a value", word);
		usage_error(c->prog, "option -%c needs a value", optopt);
	}
	if (optopt && optopt < 256 && isprint(optopt))
		usage_error(c->prog, "unknown option -%c", optopt);
	usage_error(c->prog, "unknown option '%s'", word);
}

int cli_next(struct cli *c, int argc, char **argv)
{
	int r;

	if (!c->ready) {
		build(c);
		opterr = 0;
	}
	for (;;) {
		r = getopt_long(argc, argv, c->all_shorts, c->all_longs, NULL);
		if (r == -1)
			return -1;
		if (r == '?' || r == ':')
			bad_option(c, r, argv);
		if (r == 'h') {
			if (c->help)
				c->help(c);
			exit(0);
		}
		if (r == 'V' || r == CLI_OPT_VERSION) {
			cli_version(c, stdout);
			exit(0);
		}
		if (!common_by_code(c, r))
			return r;
		cli_apply(c, r, optarg);
	}
}

/* The same message in every tool for a device that is not there, before anything
 * starts: what is there instead, and exit 1 (not a usage error: the system lacks it). */
static void device_must_exist(const struct cli *c)
{
	struct rcc_device_info *devs = NULL;
	int n = 0, rc = rcc_device_list(&devs, &n);

	for (int i = 0; !rc && i < n; i++)
		if (!strcmp(devs[i].name, c->ctx->device)) {
			rcc_device_list_free(devs, n);
			return;
		}
	fprintf(stderr, "%s: no RDMA device named '%s'", c->prog, c->ctx->device);
	if (!rc && n) {
		fputs(" (there are:", stderr);
		for (int i = 0; i < n; i++)
			fprintf(stderr, " %s", devs[i].name);
		fputs("; rcc-info lists them)", stderr);
	} else {
		fputs(" (no RDMA device here; -T tcp needs none)", stderr);
	}
	fputc('\n', stderr);
	if (!rc)
		rcc_device_list_free(devs, n);
	exit(1);
}

bool cli_checking(void)
{
	const char *v = getenv("RCC_CLI_CHECK");
	return v && !strcmp(v, "1");
}

void cli_check_done(const char *prog)
{
	if (!cli_checking())
		return;
	printf("%s: command line ok\n", prog);
	exit(0);
}

void cli_finish(struct cli *c)
{
	if (!(c->take & CLI_DEVICE) || !c->ctx || !c->ctx->device)
		return;
	if (c->ctx->transport == RCC_TRANSPORT_TCP)
		usage_error(c->prog,
			    "-d %s names an RDMA device, which the tcp transport does not use: "
			    "drop -d or use -T verbs",
			    c->ctx->device);
	/* what "auto" does with a device anyway; saying it makes messages name verbs */
	c->ctx->transport = RCC_TRANSPORT_VERBS;
	if ((c->take & CLI_TRANSPORT) && !cli_checking())
		device_must_exist(c);
}

uint64_t cli_duration(const struct cli *c, const char *opt, const char *arg, uint64_t min_ms,
		      uint64_t max_ms, bool legacy_ms)
{
	uint64_t ms;
	bool bare;

	if (parse_duration(arg, &ms, &bare))
		usage_error(c->prog,
			    "%s: bad duration '%s' (a number and a unit: 500ms, 5s, 1.5s, 2m, "
			    "1h; a bare number is seconds)",
			    opt, arg);
	if (bare && legacy_ms && ms >= 100000) {
		/* Scripts written when this option took milliseconds ("--timeout 5000")
		 * keep working; nobody means 100 s or more without saying so. */
		ms /= 1000;
		fprintf(stderr,
			"%s: warning: %s %s read as %llums, as when this option took "
			"milliseconds; write %llums or %gs to say which\n",
			c->prog, opt, arg, (unsigned long long)ms, (unsigned long long)ms,
			(double)ms / 1000);
	}
	if (ms < min_ms || ms > max_ms)
		usage_error(c->prog, "%s: '%s' is out of range (%llums to %llus)", opt, arg,
			    (unsigned long long)min_ms, (unsigned long long)(max_ms / 1000));
	return ms;
}

void cli_peer(const struct cli *c, const char *what, const char *arg, char *host, size_t hostlen,
	      int *port)
{
	if (split_host_port(arg, host, hostlen, port))
		usage_error(c->prog,
			    "bad %s '%s' (HOST, HOST:PORT, [IPV6] or [IPV6]:PORT; port 1-65535)",
			    what, arg);
}

/* "  -x, --name ARG           text", the text wrapped at 79 columns under itself. */
static void help_line(FILE *f, int letter, const char *name, const char *arg, const char *text)
{
	char left[64];
	size_t col = 27;

	if (letter)
		snprintf(left, sizeof(left), "-%c, --%s%s%s", letter, name, arg ? " " : "",
			 arg ? arg : "");
	else
		snprintf(left, sizeof(left), "    --%s%s%s", name, arg ? " " : "", arg ? arg : "");
	if (strlen(left) > 23)
		fprintf(f, "  %s\n%*s", left, (int)col, "");
	else
		fprintf(f, "  %-23s  ", left);
	while (*text) {
		size_t word = strcspn(text, " ");
		if (col > 27 && col + 1 + word > 79) {
			fprintf(f, "\n%27s", "");
			col = 27;
		} else if (col > 27) {
			fputc(' ', f);
			col++;
		}
		fprintf(f, "%.*s", (int)word, text);
		col += word;
		text += word;
		text += strspn(text, " ");
	}
	fputc('\n', f);
}

void cli_help_common(const struct cli *c, FILE *f)
{
	char text[200];

	for (size_t i = 0; i < NCOMMON; i++) {
		const struct common_opt *o = &common[i];
		const char *t = o->help;

		if (!(c->take & o->take))
			continue;
		if (o->code == 'd' && c->device_help) {
			t = c->device_help;
		} else if (o->code == 'm') {
			snprintf(text, sizeof(text), "%s (%s)", o->help, cq_mode_name(c->mode));
			t = text;
		} else if (o->code == 'c') {
			snprintf(text, sizeof(text), "%s (%s)", o->help, qp_type_name(c->qp_type));
			t = text;
		} else if (o->code == 'p') {
			snprintf(text, sizeof(text), "%s (%d)", o->help, c->port);
			t = text;
		} else if (o->code == CLI_OPT_TIMEOUT) {
			snprintf(text, sizeof(text), "bound on %s (%gs)",
				 c->timeout_help ? c->timeout_help : "every wait",
				 c->timeout_ms / 1000.0);
			t = text;
		}
		help_line(f, o->code < 256 ? o->code : 0, o->name, o->arg, t);
	}
	help_line(f, 'h', "help", NULL, "print this help and exit");
	help_line(f, 'V', "version", NULL, "print the version and exit");
	fputc('\n', f);
	if (c->take & CLI_TIMEOUT)
		fputs("TIME is a number and a unit: 500ms, 5s, 1.5s, 2m, 1h (a bare number is "
		      "seconds).\n",
		      f);
	if (c->take & CLI_TRANSPORT)
		fputs("A peer is HOST, HOST:PORT or [IPV6]:PORT.\n", f);
	fputs("The options above mean the same in every rcc tool (docs/cli.md).\n", f);
}

void cli_version(const struct cli *c, FILE *f)
{
	fprintf(f, "%s (rcc) %s\n", c->prog, rcc_version());
	if (c->version_extra)
		fprintf(f, "%s\n", c->version_extra);
	fputs("Copyright (c) 2026, the rcc authors. License: BSD-3-Clause.\n", f);
}
