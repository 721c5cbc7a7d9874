/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Terminal output in perftest's layout (banner, one row per size), so habits
 * carry over -- but aligned with spaces only, each header one word with its
 * unit, so that `column`, awk and people read the same columns. A row starts
 * with " <size>", as perftest's do, for the scripts that look for that.
 */
#include <stdio.h>
#include <string.h>

#include "opts.h"
#include "perf.h"

#define RESULT_LINE \
	"---------------------------------------------------------------------------------------\n"

/* One banner row: two "key : value" pairs side by side (the second may be NULL). */
static void row(FILE *f, const char *k1, const char *v1, const char *k2, const char *v2)
{
	if (k2)
		fprintf(f, " %-16s: %-22s %-15s: %s\n", k1, v1, k2, v2);
	else
		fprintf(f, " %-16s: %s\n", k1, v1);
}

/* The iterations each size of this test really runs: "1000", or the range when
 * large sizes get fewer ("5000 to 312, fewer above 64 KiB"). */
static void iterations(const struct perf_params *p, enum perf_op op, enum perf_kind kind, char *buf,
		       size_t len)
{
	uint32_t sizes[32], lo = UINT32_MAX, hi = 0;
	int n;

	if (p->flags & PF_DURATION) {
		snprintf(buf, len, "for %.3gs per size", p->duration_ms / 1000.0);
		return;
	}
	plan_sizes(p, op, sizes, &n);
	for (int i = 0; i < n; i++) {
		uint32_t it = plan_iters(p, kind, sizes[i]);
		lo = it < lo ? it : lo;
		hi = it > hi ? it : hi;
	}
	if (!n)
		snprintf(buf, len, "-");
	else if (lo == hi)
		snprintf(buf, len, "%u", hi);
	else
		snprintf(buf, len, "%u to %u, fewer above 64 KiB", hi, lo);
}

void report_banner(const struct perf_config *cfg, const struct perf_params *p, enum perf_op op,
		   enum perf_kind kind, const char *transport, const char *path,
		   uint32_t max_inline, bool server)
{
	const char *dev = cfg->ctx.device ? cfg->ctx.device : "(first)";
	bool lat = kind == KIND_LAT;
	bool rd = op == OP_READ || op == OP_CAS || op == OP_FADD;
	const char *bringup = cfg->ctx.bringup == RCC_BRINGUP_MANUAL ? "manual" : "rdma_cm";
	char a[64], b[64], its[64];
	FILE *f = cfg->text;

	if (cfg->quiet)
		return;
	if (!strcmp(transport, "tcp")) {
		bringup = "tcp";
		dev = "-";
	}
	fprintf(f, "\n" RESULT_LINE);
	fprintf(f, "                    %s %s Test%s\n", op_title(op), lat ? "Latency" : "BW",
		server ? " (server)" : "");
	row(f, "Transport", transport, "Device", dev);
	row(f, "Path", path, "Connection", qp_type_name((enum rcc_qp_type)p->qp_type));
	snprintf(a, sizeof(a), "%u", lat ? 1 : p->qps);
	row(f, "Number of qps", a, "Completion",
	    p->cq_mode == RCC_CQ_FD ? "fd (epoll)" : cq_mode_name((enum rcc_cq_mode)p->cq_mode));
	snprintf(a, sizeof(a), "%u", p->tx_depth);
	snprintf(b, sizeof(b), "%u", p->rx_depth);
	row(f, "TX depth", a, "RX depth", b);
	if (rd)
		snprintf(a, sizeof(a), "%u", p->outs);
	else
		snprintf(a, sizeof(a), "%u B", max_inline);
	row(f, rd ? "Outstand reads" : "Max inline data", a, "Bring-up", bringup);
	if (!lat) {
		snprintf(a, sizeof(a), "%u", p->post_list);
		snprintf(b, sizeof(b), "%u", p->cq_mod);
		row(f, "Post list", a, "CQ moderation", b);
	}
	iterations(p, op, kind, its, sizeof(its));
	snprintf(a, sizeof(a), "%s%s", (p->flags & PF_BIDIR) && !lat ? "bidirectional" : "one way",
		 p->flags & PF_VALIDATE ? ", validated" : "");
	row(f, "Iterations", its, NULL, NULL);
	row(f, "Direction", a, NULL, NULL);
	if (lat)
		row(f, "Latency", rd ? "full round trip" : "half round trip (round trip / 2)", NULL,
		    NULL);
	fputs(RESULT_LINE, f);
}

/* Latency columns: #bytes, #iterations, then seven figures in microseconds. */
static const char *const lat_cols[] = { "t_min[us]",   "t_max[us]", "t_typical[us]", "t_avg[us]",
					"t_stdev[us]", "t_p99[us]", "t_p99.9[us]" };
#define FIG_W 14 /* width of a figure column; every header fits */

void report_header(const struct perf_config *cfg, enum perf_kind kind)
{
	FILE *f = cfg->text;
	const char *unit = cfg->report_gbits ? "[Gbit/s]" : "[MiB/s]";
	char peak[32], avg[32];

	fprintf(f, " %-10s %12s", "#bytes", "#iterations");
	if (kind == KIND_LAT) {
		for (size_t i = 0; i < sizeof(lat_cols) / sizeof(lat_cols[0]); i++)
			fprintf(f, " %*s", FIG_W, lat_cols[i]);
	} else {
		snprintf(peak, sizeof(peak), "BW_peak%s", unit);
		snprintf(avg, sizeof(avg), "BW_avg%s", unit);
		fprintf(f, " %*s %*s %*s", FIG_W + 2, peak, FIG_W + 2, avg, FIG_W, "MsgRate[Mpps]");
	}
	fputc('\n', f);
}

void report_point(const struct perf_config *cfg, const struct perf_point *pt)
{
	FILE *f = cfg->text;

	fprintf(f, " %-10u %12llu", pt->size, (unsigned long long)pt->iters);
	if (pt->kind == KIND_LAT) {
		const struct summary *s = &pt->lat;
		const double v[] = {
			s->min, s->max, s->median, s->mean, s->stdev, s->p99, s->p999
		};
		for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
			fprintf(f, " %*.2f", FIG_W, v[i]);
	} else {
		double peak = cfg->report_gbits ? Bps_to_Gbps(pt->bw.bw_peak_Bps) :
						  Bps_to_MBps(pt->bw.bw_peak_Bps);
		double avg = cfg->report_gbits ? Bps_to_Gbps(pt->bw.bw_avg_Bps) :
						 Bps_to_MBps(pt->bw.bw_avg_Bps);
		fprintf(f, " %*.2f %*.2f %*.6f", FIG_W + 2, peak, FIG_W + 2, avg, FIG_W,
			pt->bw.msg_rate_Mpps);
	}
	fputc('\n', f);
	fflush(f);
}

void report_footer(const struct perf_config *cfg)
{
	fputs(RESULT_LINE, cfg->text);
	fflush(cfg->text);
}
