/* SPDX-License-Identifier: BSD-3-Clause */
/* JSON and CSV: every figure of every point, with the parameters that produced it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "json.h"
#include "opts.h"
#include "perf.h"

static const char *bringup_str(const struct perf_config *cfg, const struct run_info *ri)
{
	if (!strcmp(ri->transport, "tcp"))
		return "tcp";
	return cfg->ctx.bringup == RCC_BRINGUP_MANUAL ? "manual" : "cm";
}

/* "-" is stdout (--json without a file). */
static FILE *open_out(const char *path)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;

	if (!f)
		fprintf(stderr, "rcc-perf: cannot write %s: %s\n", path, strerror(errno));
	return f;
}

static int close_out(FILE *f, const char *path)
{
	int bad = ferror(f);

	if ((f == stdout ? fflush(f) : fclose(f)) || bad) {
		fprintf(stderr, "rcc-perf: error writing %s\n", path);
		return -EIO;
	}
	return 0;
}

/* A JSON number; non-finite values (which JSON lacks) become null. */
static void jnum(FILE *f, const char *key, double v, const char *sep)
{
	if (v != v || v > 1e300 || v < -1e300)
		fprintf(f, "\"%s\": null%s", key, sep);
	else
		fprintf(f, "\"%s\": %.6g%s", key, v, sep);
}

static void json_params(FILE *f, const struct perf_config *cfg, const struct perf_params *p,
			const struct run_info *ri)
{
	bool first = true;

	fprintf(f, "  \"params\": {\n    \"tests\": [");
	for (int op = 0; op < OP_COUNT; op++) {
		if (p->ops & (1u << op)) {
			fprintf(f, "%s\"%s\"", first ? "" : ", ", op_name(op));
			first = false;
		}
	}
	fprintf(f, "],\n    \"kinds\": [%s%s%s],\n", p->kinds & (1u << KIND_LAT) ? "\"lat\"" : "",
		p->kinds == KINDS_ALL ? ", " : "", p->kinds & (1u << KIND_BW) ? "\"bw\"" : "");
	fprintf(f, "    \"all_sizes\": %s,\n", p->flags & PF_ALL_SIZES ? "true" : "false");
	if (p->flags & PF_SIZE_LIST)
		fprintf(f, "    \"size_mask\": %u,\n", p->size);
	else
		fprintf(f, "    \"size\": %u,\n", p->size);
	if (p->flags & PF_ITERS_SET)
		fprintf(f, "    \"iters\": %u,\n", p->iters);
	else
		fprintf(f, "    \"iters\": \"default\",\n");
	if (p->flags & PF_DURATION)
		fprintf(f, "    \"duration_s\": %.3f,\n", p->duration_ms / 1000.0);
	else
		fprintf(f, "    \"duration_s\": null,\n");
	if (p->flags & PF_WARMUP_SET)
		fprintf(f, "    \"warmup\": %u,\n", p->warmup);
	else
		fprintf(f, "    \"warmup\": \"default\",\n");
	fprintf(f, "    \"qps\": %u,\n    \"post_list\": %u,\n    \"cq_mod\": %u,\n", p->qps,
		p->post_list, p->cq_mod);
	fprintf(f, "    \"tx_depth\": %u,\n    \"rx_depth\": %u,\n    \"outs\": %u,\n", p->tx_depth,
		p->rx_depth, p->outs);
	if (p->inline_size == PERF_INLINE_AUTO)
		fprintf(f, "    \"inline_size\": \"auto\",\n");
	else
		fprintf(f, "    \"inline_size\": %u,\n", p->inline_size);
	fprintf(f, "    \"max_inline\": %u,\n", ri->max_inline);
	fprintf(f, "    \"cq_mode\": \"%s\",\n", cq_mode_name((enum rcc_cq_mode)p->cq_mode));
	fprintf(f, "    \"connection\": \"%s\",\n", qp_type_name((enum rcc_qp_type)p->qp_type));
	fprintf(f, "    \"bidirectional\": %s,\n", p->flags & PF_BIDIR ? "true" : "false");
	fprintf(f, "    \"validate\": %s,\n", p->flags & PF_VALIDATE ? "true" : "false");
	fprintf(f, "    \"target_poll\": %s,\n", p->flags & PF_TARGET_POLL ? "true" : "false");
	fprintf(f, "    \"memory\": \"%s\",\n", p->flags & PF_HEAP_MEM ? "heap" : "shared");
	fprintf(f, "    \"one_buffer\": %s,\n", p->flags & PF_ONE_BUFFER ? "true" : "false");
	fprintf(f, "    \"peak\": %s,\n", p->flags & PF_NO_PEAK ? "false" : "true");
	fprintf(f, "    \"transport\": \"%s\",\n", ri->transport);
	fprintf(f, "    \"path\": \"%s\",\n", ri->path);
	fprintf(f, "    \"bringup\": \"%s\",\n", bringup_str(cfg, ri));
	char jb[300];
	fprintf(f, "    \"device\": %s,\n",
		json_str(cfg->ctx.device ? cfg->ctx.device : "", jb, sizeof(jb)));
	fprintf(f, "    \"ib_port\": %d,\n", cfg->ctx.port);
	fprintf(f, "    \"gid_index\": %d,\n",
		cfg->ctx.gid_index == RCC_GID_INDEX_ZERO ? 0 :
		cfg->ctx.gid_index                       ? cfg->ctx.gid_index :
							   -1);
	fprintf(f, "    \"server\": %s,\n    \"port\": %d\n  },\n",
		json_str(ri->peer, jb, sizeof(jb)), cfg->port);
}

static void json_point(FILE *f, const struct perf_point *pt, const char *sep)
{
	fprintf(f, "    {\"test\": \"%s\", \"kind\": \"%s\", \"size\": %u, \"iterations\": %llu, ",
		op_name(pt->op), kind_name(pt->kind), pt->size, (unsigned long long)pt->iters);
	if (pt->kind == KIND_LAT) {
		const struct summary *s = &pt->lat;
		fprintf(f, "\"rtt_factor\": %d, \"samples\": %zu, ", pt->rtt_factor, s->n);
		jnum(f, "t_min_us", s->min, ", ");
		jnum(f, "t_max_us", s->max, ", ");
		jnum(f, "t_typical_us", s->median, ", ");
		jnum(f, "t_avg_us", s->mean, ", ");
		jnum(f, "t_stdev_us", s->stdev, ", ");
		jnum(f, "p90_us", s->p90, ", ");
		jnum(f, "p99_us", s->p99, ", ");
		jnum(f, "p99_9_us", s->p999, ", ");
	} else {
		jnum(f, "bw_peak_MBps", Bps_to_MBps(pt->bw.bw_peak_Bps), ", ");
		jnum(f, "bw_avg_MBps", Bps_to_MBps(pt->bw.bw_avg_Bps), ", ");
		jnum(f, "bw_peak_Gbps", Bps_to_Gbps(pt->bw.bw_peak_Bps), ", ");
		jnum(f, "bw_avg_Gbps", Bps_to_Gbps(pt->bw.bw_avg_Bps), ", ");
		jnum(f, "bw_avg_Bps", pt->bw.bw_avg_Bps, ", ");
		jnum(f, "msg_rate_Mpps", pt->bw.msg_rate_Mpps, ", ");
	}
	fprintf(f, "\"bytes\": %llu, ", (unsigned long long)pt->bytes);
	jnum(f, "seconds", pt->seconds, "");
	fprintf(f, "}%s\n", sep);
}

int export_json(const char *path, const struct perf_config *cfg, const struct perf_params *p,
		const struct run_info *ri, const struct perf_results *r)
{
	FILE *f = open_out(path);
	char when[32];
	time_t now = time(NULL);

	if (!f)
		return -errno;
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	fprintf(f, "{\n  \"tool\": \"rcc-perf\",\n  \"schema\": %d,\n  \"rcc_version\": \"%s\",\n",
		PERF_JSON_SCHEMA, rcc_version());
	fprintf(f, "  \"time\": \"%s\",\n", when);
	fprintf(f, "  \"units\": {\"latency\": \"us; half round trip for send/write/write_imm "
		   "(rtt_factor 2), full round trip for read/cas/fadd\", \"MBps\": \"2^20 B/s\", "
		   "\"Gbps\": \"1e9 bit/s\"},\n");
	json_params(f, cfg, p, ri);
	fprintf(f, "  \"results\": [\n");
	for (size_t i = 0; i < r->n; i++)
		json_point(f, &r->v[i], i + 1 < r->n ? "," : "");
	fprintf(f, "  ]\n}\n");
	return close_out(f, path);
}

int export_csv(const char *path, const struct perf_config *cfg, const struct perf_params *p,
	       const struct run_info *ri, const struct perf_results *r)
{
	FILE *f = open_out(path);

	if (!f)
		return -errno;
	fprintf(f, "test,kind,size_B,iterations,t_min_us,t_max_us,t_typical_us,t_avg_us,t_stdev_us,"
		   "p90_us,p99_us,p99_9_us,bw_peak_MBps,bw_avg_MBps,bw_avg_Gbps,msg_rate_Mpps,"
		   "bytes,seconds,transport,bringup,qps,post_list,cq_mod,tx_depth,rx_depth,"
		   "max_inline,outs,cq_mode,bidirectional,validate,target_poll,warmup,"
		   "duration_s\n");
	for (size_t i = 0; i < r->n; i++) {
		const struct perf_point *pt = &r->v[i];
		const struct summary *s = &pt->lat;
		fprintf(f, "%s,%s,%u,%llu,", op_name(pt->op), kind_name(pt->kind), pt->size,
			(unsigned long long)pt->iters);
		if (pt->kind == KIND_LAT)
			fprintf(f, "%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,,,,,", s->min, s->max,
				s->median, s->mean, s->stdev, s->p90, s->p99, s->p999);
		else
			fprintf(f, ",,,,,,,,%.4f,%.4f,%.6f,%.6f,", Bps_to_MBps(pt->bw.bw_peak_Bps),
				Bps_to_MBps(pt->bw.bw_avg_Bps), Bps_to_Gbps(pt->bw.bw_avg_Bps),
				pt->bw.msg_rate_Mpps);
		fprintf(f, "%llu,%.6f,%s,%s,%u,%u,%u,%u,%u,%u,%u,%s,%d,%d,%d,",
			(unsigned long long)pt->bytes, pt->seconds, ri->transport,
			bringup_str(cfg, ri), pt->kind == KIND_LAT ? 1 : p->qps, p->post_list,
			p->cq_mod, p->tx_depth, p->rx_depth, ri->max_inline, p->outs,
			cq_mode_name((enum rcc_cq_mode)p->cq_mode), !!(p->flags & PF_BIDIR),
			!!(p->flags & PF_VALIDATE), !!(p->flags & PF_TARGET_POLL));
		if (p->flags & PF_WARMUP_SET)
			fprintf(f, "%u,", p->warmup);
		else
			fprintf(f, "%u,", plan_warmup(p, pt->kind, pt->size));
		if (p->flags & PF_DURATION)
			fprintf(f, "%.3f\n", p->duration_ms / 1000.0);
		else
			fprintf(f, "\n");
	}
	return close_out(f, path);
}
