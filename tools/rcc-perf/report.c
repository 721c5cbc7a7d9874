/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Terminal output in perftest's layout, so that existing habits (and
 * scripts that read perftest's columns) carry over.
 */
#include <stdio.h>
#include <string.h>

#include "perf.h"

#define RESULT_LINE \
	"---------------------------------------------------------------------------------------\n"

void report_banner(const struct perf_config *cfg, const struct perf_params *p, enum perf_op op,
		   enum perf_kind kind, const char *transport, uint32_t max_inline, bool server)
{
	const char *dev = cfg->ctx.device ? cfg->ctx.device : "(first)";
	bool lat = kind == KIND_LAT;
	bool rd = op == OP_READ || op == OP_CAS || op == OP_FADD;
	const char *bringup = cfg->ctx.bringup == RCC_BRINGUP_MANUAL ? "manual" : "rdma_cm";

	if (cfg->quiet)
		return;
	if (!strcmp(transport, "tcp")) {
		bringup = "tcp";
		dev = "-";
	}
	printf("\n" RESULT_LINE);
	printf("                    %s %s Test%s\n", op_title(op), lat ? "Latency" : "BW",
	       server ? " (server)" : "");
	printf(" Transport       : %-10s\tDevice         : %s\n", transport, dev);
	printf(" Number of qps   : %-10u\tCompletion     : %s\n", lat ? 1 : p->qps,
	       p->cq_mode == RCC_CQ_POLL ? "poll" :
	       p->cq_mode == RCC_CQ_WAIT ? "wait" :
					   "fd (epoll)");
	printf(" TX depth        : %-10u\tRX depth       : %u\n", p->tx_depth, p->rx_depth);
	if (rd)
		printf(" Outstand reads  : %-10u", p->outs);
	else
		printf(" Max inline data : %-7u[B]", max_inline);
	printf("\tBring-up       : %s\n", bringup);
	if (!lat)
		printf(" Post list       : %-10u\tCQ moderation  : %u\n", p->post_list, p->cq_mod);
	if (p->flags & PF_DURATION)
		printf(" Duration        : %.3g s", p->duration_ms / 1000.0);
	else
		printf(" Iterations      : %-10s", p->flags & PF_ITERS_SET ? "-n" : "default");
	printf("\tDirection      : %s%s\n",
	       (p->flags & PF_BIDIR) && !lat ? "bidirectional" : "one way",
	       p->flags & PF_VALIDATE ? ", validated" : "");
	printf(RESULT_LINE);
}

void report_header(const struct perf_config *cfg, enum perf_kind kind)
{
	if (kind == KIND_LAT)
		printf(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    "
		       "t_avg[usec]    t_stdev[usec]   99%% percentile[usec]   "
		       "99.9%% percentile[usec] \n");
	else if (cfg->report_gbits)
		printf(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   "
		       "MsgRate[Mpps]\n");
	else
		printf(" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   "
		       "MsgRate[Mpps]\n");
}

void report_point(const struct perf_config *cfg, const struct perf_point *pt)
{
	if (pt->kind == KIND_LAT) {
		const struct summary *s = &pt->lat;
		printf(" %-7u %-10llu     %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     "
		       "\t%-7.2f\t\t%-7.2f \t\t%-7.2f\n",
		       pt->size, (unsigned long long)pt->iters, s->min, s->max, s->median, s->mean,
		       s->stdev, s->p99, s->p999);
	} else {
		double peak = cfg->report_gbits ? Bps_to_Gbps(pt->bw.bw_peak_Bps) :
						  Bps_to_MBps(pt->bw.bw_peak_Bps);
		double avg = cfg->report_gbits ? Bps_to_Gbps(pt->bw.bw_avg_Bps) :
						 Bps_to_MBps(pt->bw.bw_avg_Bps);
		printf(" %-7u    %-10llu       %-7.2f            %-7.2f\t\t   %-7.6f\n", pt->size,
		       (unsigned long long)pt->iters, peak, avg, pt->bw.msg_rate_Mpps);
	}
	fflush(stdout);
}

void report_footer(void)
{
	printf(RESULT_LINE);
	fflush(stdout);
}
