/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rcc-perf's pure parts: latency statistics (tools/common/stats), bandwidth
 * figures and units, perftest's peak, the plan, the wire encodings and the
 * validation patterns.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "harness.h"
#include "perf.h"
#include "stats.h"

#define CHECK_NEAR(a, b, eps)                                                                 \
	CHECK_MSG(fabs((double)(a) - (double)(b)) <= (eps), "%s == %s: %.9g != %.9g", #a, #b, \
		  (double)(a), (double)(b))

static void percentile_nearest_rank(void)
{
	double v[1000];

	for (int i = 0; i < 1000; i++)
		v[i] = i + 1; /* rank r holds value r */
	/* ceil(p/100 * n): the smallest value with at least p% of samples at or below */
	CHECK_NEAR(percentile_sorted(v, 1000, 50), 500, 0);
	CHECK_NEAR(percentile_sorted(v, 1000, 99), 990, 0);
	/* 99.9/100*1000 is 999.0000000000001 in binary floating point: still rank 999 */
	CHECK_NEAR(percentile_sorted(v, 1000, 99.9), 999, 0);
	CHECK_NEAR(percentile_sorted(v, 1000, 100), 1000, 0);
	CHECK_NEAR(percentile_sorted(v, 1000, 0.01), 1, 0);
	CHECK_NEAR(percentile_sorted(v, 1000, 0), 1, 0);
	CHECK_NEAR(percentile_sorted(v, 100, 99), 99, 0);
	CHECK_NEAR(percentile_sorted(v, 100, 99.9), 100, 0);
	CHECK_NEAR(percentile_sorted(v, 10, 99), 10, 0);
	CHECK_NEAR(percentile_sorted(v, 10, 90), 9, 0);
	CHECK_NEAR(percentile_sorted(v, 10, 90.0001), 10, 0);
	CHECK_NEAR(percentile_sorted(v, 1, 99.9), 1, 0);
	CHECK_NEAR(percentile_sorted(v, 1, 50), 1, 0);
	CHECK_NEAR(percentile_sorted(v, 0, 50), 0, 0);
	CHECK_NEAR(percentile_sorted(v, 3, 200), 3, 0); /* clamped */
}

static void summary_figures(void)
{
	struct samples s;
	struct summary r;
	const double x[] = { 9, 2, 4, 4, 5, 4, 7, 5 }; /* mean 5 */

	CHECK_OK(samples_init(&s, 2)); /* grows */
	for (size_t i = 0; i < sizeof(x) / sizeof(x[0]); i++)
		CHECK_OK(samples_add(&s, x[i]));
	samples_summarise(&s, &r);
	CHECK_EQ(r.n, 8);
	CHECK_NEAR(r.min, 2, 0);
	CHECK_NEAR(r.max, 9, 0);
	CHECK_NEAR(r.mean, 5, 1e-12);
	/* floating-point sample stdev: sqrt(32 / 7) */
	CHECK_NEAR(r.stdev, sqrt(32.0 / 7.0), 1e-12);
	CHECK_NEAR(r.median, 4.5, 0); /* even count: mean of the middle two, as perftest */
	CHECK_NEAR(r.p99, 9, 0);
	CHECK(s.v[0] == 2 && s.v[7] == 9); /* sorted in place */

	CHECK_OK(samples_add(&s, 1));
	samples_summarise(&s, &r);
	CHECK_NEAR(r.median, 4, 0); /* odd count: the middle one */

	/* a sub-integer spread: an integer stdev (perftest's old bug) would say 0 */
	samples_clear(&s);
	CHECK_OK(samples_add(&s, 1.0));
	CHECK_OK(samples_add(&s, 1.5));
	samples_summarise(&s, &r);
	CHECK_NEAR(r.stdev, sqrt(0.125), 1e-12);

	samples_clear(&s);
	CHECK_OK(samples_add(&s, 3.25));
	samples_summarise(&s, &r);
	CHECK_NEAR(r.stdev, 0, 0);
	CHECK_NEAR(r.median, 3.25, 0);
	CHECK_NEAR(r.p999, 3.25, 0);

	samples_clear(&s);
	samples_summarise(&s, &r);
	CHECK_EQ(r.n, 0);
	CHECK_NEAR(r.mean, 0, 0);
	samples_free(&s);
}

static void units_and_rates(void)
{
	struct bw_figures f;
	char buf[32];

	/* 1000 messages of 1 MiB in one second */
	bw_figures(1000, 1u << 20, 1000000000ull, 0, &f);
	CHECK_NEAR(f.bw_avg_Bps, 1000.0 * 1048576, 1e-3);
	CHECK_NEAR(Bps_to_MBps(f.bw_avg_Bps), 1000, 1e-9); /* perftest: MB = 2^20 B */
	CHECK_NEAR(Bps_to_Gbps(f.bw_avg_Bps), 1000.0 * 1048576 * 8 / 1e9, 1e-9);
	CHECK_NEAR(f.msg_rate_Mpps, 0.001, 1e-12);
	CHECK_NEAR(f.bw_peak_Bps, 0, 0); /* no peak given */
	/* 2 M messages of 8 B in 0.5 s: 4 Mpps; a peak of 100 ns per message */
	bw_figures(2000000, 8, 500000000ull, 100, &f);
	CHECK_NEAR(f.msg_rate_Mpps, 4, 1e-9);
	CHECK_NEAR(f.bw_avg_Bps, 32e6, 1e-3);
	CHECK_NEAR(f.bw_peak_Bps, 8e7, 1e-3);
	bw_figures(10, 8, 0, 0, &f); /* no time: no division by zero */
	CHECK_NEAR(f.bw_avg_Bps, 0, 0);
	CHECK(!strcmp(fmt_rate(1.5e9, buf, sizeof(buf)), "1.50 GB/s"));
	CHECK(!strcmp(fmt_bytes(4096, buf, sizeof(buf)), "4 KiB"));
	CHECK(!strcmp(fmt_bytes(1536, buf, sizeof(buf)), "1.50 KiB"));
}

/* perftest's search, written out plainly: runs from a post-list boundary i to a
 * signalled completion j (every cq_mod-th, and the last message). */
static double peak_reference(const uint64_t *tp, const uint64_t *tc, size_t n, size_t l, size_t mod)
{
	double best = (double)(tc[0] - tp[0]);

	for (size_t i = 0; i < n; i += l)
		for (size_t j = i; j < n; j++)
			if ((j + 1) % mod == 0 || j == n - 1) {
				double t = (double)(tc[j] - tp[i]) / (double)(j - i + 1);
				if (t < best)
					best = t;
			}
	return best;
}

static void peak_bandwidth(void)
{
	uint64_t tp[64], tc[64];
	uint64_t x = 12345;

	/* steady 10 ns per message, each taking 50 ns: the longest run wins, 120 / 8 */
	for (int i = 0; i < 8; i++) {
		tp[i] = (uint64_t)i * 10;
		tc[i] = tp[i] + 50;
	}
	CHECK_NEAR(bw_peak_ns_per_msg(tp, tc, 8, 1, 1, 0), 15, 1e-9);
	CHECK_NEAR(bw_peak_ns_per_msg(tp, tc, 0, 1, 1, 0), 0, 0);
	CHECK_NEAR(bw_peak_ns_per_msg(tp, tc, 1, 1, 1, 0), 50, 0);
	/* irregular stamps against the plain search, with post lists and moderation */
	for (int i = 0; i < 64; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		tp[i] = (i ? tp[i - 1] : 0) + (x >> 60);
		uint64_t after = i && tc[i - 1] > tp[i] ? tc[i - 1] : tp[i];
		tc[i] = after + ((x >> 40) & 63) + 1;
	}
	static const size_t lists[] = { 1, 2, 4 }, mods[] = { 1, 3, 16 };
	for (int a = 0; a < 3; a++) {
		for (int b = 0; b < 3; b++) {
			double want = peak_reference(tp, tc, 64, lists[a], mods[b]);
			double got = bw_peak_ns_per_msg(tp, tc, 64, (unsigned)lists[a],
							(unsigned)mods[b], 0);
			CHECK_NEAR(got, want, 1e-9);
			/* a thinned search can only miss the best run, never beat it */
			double thin = bw_peak_ns_per_msg(tp, tc, 64, (unsigned)lists[a],
							 (unsigned)mods[b], 50);
			CHECK(thin >= want - 1e-9);
			CHECK(thin <= (double)(tc[63] - tp[0]) / 64 + 1e-9);
		}
	}
}

static void plan_sizes_and_iters(void)
{
	struct perf_params p = { .ops = OPS_ALL,
				 .kinds = KINDS_ALL,
				 .size = 64,
				 .qps = 1,
				 .post_list = 1,
				 .cq_mod = 1,
				 .tx_depth = 128,
				 .rx_depth = 512,
				 .outs = 16,
				 .inline_size = PERF_INLINE_AUTO };
	uint32_t sizes[32];
	int n;

	CHECK(plan_check(&p) == NULL);
	plan_sizes(&p, OP_WRITE, sizes, &n);
	CHECK(n == 1 && sizes[0] == 64);
	plan_sizes(&p, OP_CAS, sizes, &n);
	CHECK(n == 1 && sizes[0] == 8);
	p.flags |= PF_ALL_SIZES;
	plan_sizes(&p, OP_SEND, sizes, &n);
	CHECK_EQ(n, 23);
	CHECK_EQ(sizes[0], 2);
	CHECK_EQ(sizes[22], 8u << 20);
	CHECK_EQ(plan_max_size(&p), 8u << 20);
	CHECK_EQ(plan_iters(&p, KIND_LAT, 64), 1000);
	CHECK_EQ(plan_iters(&p, KIND_BW, 65536), 5000);
	CHECK_EQ(plan_iters(&p, KIND_BW, 1u << 20), 312);
	CHECK_EQ(plan_iters(&p, KIND_LAT, 8u << 20), 100);
	CHECK_EQ(plan_warmup(&p, KIND_LAT, 64), 100);
	CHECK_EQ(plan_warmup(&p, KIND_BW, 1u << 20), 31);
	p.flags |= PF_ITERS_SET;
	p.iters = 7;
	CHECK_EQ(plan_iters(&p, KIND_BW, 8u << 20), 7);
	CHECK_EQ(plan_warmup(&p, KIND_BW, 8u << 20), 1);
	CHECK_EQ(plan_rtt_factor(OP_WRITE), 2);
	CHECK_EQ(plan_rtt_factor(OP_READ), 1);
	CHECK_EQ(plan_rtt_factor(OP_FADD), 1);

	uint32_t mask = 0;
	CHECK_OK(parse_size_list("8,4K,64k,1M", &mask));
	CHECK_EQ(mask, 8u | 4096u | 65536u | (1u << 20));
	CHECK(parse_size_list("8,12", &mask) == -EINVAL); /* not a power of two */
	CHECK(parse_size_list("8,,16", &mask) == -EINVAL);
	CHECK(parse_size_list("2G", &mask) == -EINVAL);
	p.flags = PF_SIZE_LIST;
	p.size = mask;
	plan_sizes(&p, OP_READ, sizes, &n);
	CHECK(n == 4 && sizes[0] == 8 && sizes[1] == 4096 && sizes[3] == 1u << 20);
	CHECK_EQ(plan_max_size(&p), 1u << 20);
	CHECK(plan_check(&p) == NULL);

	uint8_t ops = 0, kinds = 0;
	CHECK_OK(parse_ops("send,atomic", &ops));
	CHECK_EQ(ops, 1u << OP_SEND | 1u << OP_CAS | 1u << OP_FADD);
	CHECK_OK(parse_ops("all", &ops));
	CHECK_EQ(ops, OPS_ALL);
	CHECK(parse_ops("send,,read", &ops) == -EINVAL);
	CHECK(parse_ops("writes", &ops) == -EINVAL);
	CHECK(parse_ops("", &ops) == -EINVAL);
	CHECK_OK(parse_kinds("bw", &kinds));
	CHECK_EQ(kinds, 1u << KIND_BW);

	/* write latency watches memory: not with a completion channel */
	p.cq_mode = RCC_CQ_WAIT;
	CHECK(!plan_runs(&p, OP_WRITE, KIND_LAT, NULL));
	CHECK(plan_runs(&p, OP_WRITE_IMM, KIND_LAT, NULL));
	CHECK(plan_runs(&p, OP_WRITE, KIND_BW, NULL));
	p.cq_mode = RCC_CQ_POLL;
	p.post_list = 200;
	CHECK(plan_check(&p) != NULL); /* post list deeper than the queue */
	p.post_list = 1;
	p.kinds = 1u << KIND_LAT;
	p.qps = 2;
	CHECK(plan_check(&p) != NULL);
	p.qps = 1;

	/* -c UC: SEND and WRITE only; -c UD: SEND only; a type rcc does not
	 * know is refused */
	CHECK(plan_check(&p) == NULL);
	p.qp_type = RCC_QP_UC;
	CHECK(plan_check(&p) != NULL); /* the plan still has READ and atomics */
	p.ops = OPS_UC;
	CHECK(plan_check(&p) == NULL);
	p.ops |= 1u << OP_FADD;
	CHECK(strstr(plan_check(&p), "need -c RC") != NULL);
	p.ops = OPS_UC;
	p.qp_type = RCC_QP_UD;
	CHECK(strstr(plan_check(&p), "-c UD carries send only") != NULL);
	p.ops = OPS_UD;
	CHECK(plan_check(&p) == NULL);
	p.qp_type = RCC_QP_UD + 1;
	CHECK(strstr(plan_check(&p), "unknown connection type") != NULL);
}

static void wire_round_trips(void)
{
	struct perf_params p = { .ops = 0x2a,
				 .kinds = 3,
				 .flags = 0x1ff,
				 .size = 0x12345678,
				 .iters = 1000000,
				 .duration_ms = 2500,
				 .warmup = 77,
				 .qps = 3,
				 .post_list = 4,
				 .cq_mod = 5,
				 .tx_depth = 600,
				 .rx_depth = 700,
				 .inline_size = PERF_INLINE_AUTO,
				 .outs = 9,
				 .cq_mode = 2,
				 .qp_type = RCC_QP_UC,
				 .cookie = 0xdeadbeef };
	struct perf_params q;
	uint8_t buf[PERF_PARAMS_WIRE_LEN];

	CHECK(PERF_PARAMS_WIRE_LEN <= RCC_CONNECT_PRIVATE_DATA_MAX);
	CHECK(PERF_DATA_HELLO_LEN <= RCC_CONNECT_PRIVATE_DATA_MAX);
	params_encode(&p, buf);
	CHECK_OK(params_decode(buf, sizeof(buf), &q));
	CHECK(p.ops == q.ops && p.kinds == q.kinds && p.flags == q.flags && p.size == q.size);
	CHECK(p.iters == q.iters && p.duration_ms == q.duration_ms && p.warmup == q.warmup);
	CHECK(p.qps == q.qps && p.post_list == q.post_list && p.cq_mod == q.cq_mod);
	CHECK(p.tx_depth == q.tx_depth && p.rx_depth == q.rx_depth && p.outs == q.outs);
	CHECK(p.inline_size == q.inline_size && p.cq_mode == q.cq_mode && p.cookie == q.cookie);
	CHECK_EQ(q.qp_type, RCC_QP_UC);
	CHECK_EQ(buf[8], 0x78); /* little endian on the wire */
	/* a plan of a client older than -c has a zero there: RC */
	buf[43] = 0;
	CHECK_OK(params_decode(buf, sizeof(buf), &q));
	CHECK_EQ(q.qp_type, RCC_QP_RC);
	CHECK(params_decode(buf, sizeof(buf) - 1, &q) == -EPROTO);
	buf[2]++;
	CHECK(params_decode(buf, sizeof(buf), &q) == -EPROTONOSUPPORT);
	buf[0] = 'x';
	CHECK(params_decode(buf, sizeof(buf), &q) == -EPROTO);

	struct rcc_remote_mr mr = { .addr = 0x1122334455667788ull,
				    .length = 1 << 20,
				    .rkey = 0xabcdef01 },
			     mr2;
	uint8_t hello[PERF_DATA_HELLO_LEN];
	uint32_t cookie;
	uint16_t index;
	data_hello_encode(42, 7, &mr, hello);
	CHECK_OK(data_hello_decode(hello, sizeof(hello), &cookie, &index, &mr2));
	CHECK(cookie == 42 && index == 7 && mr2.addr == mr.addr && mr2.rkey == mr.rkey &&
	      mr2.length == mr.length);
	CHECK(data_hello_decode(buf, sizeof(buf), &cookie, &index, &mr2) != 0);

	struct ctrl_msg m = { .type = CTRL_RESULT,
			      .op = 3,
			      .kind = 1,
			      .size = 65536,
			      .a = 1,
			      .b = 2,
			      .c = ~0ull,
			      .d = 4 },
			m2;
	uint8_t cb[PERF_CTRL_MSG_LEN];
	ctrl_encode(&m, cb);
	CHECK_OK(ctrl_decode(cb, sizeof(cb), &m2));
	CHECK(m2.type == m.type && m2.op == 3 && m2.kind == 1 && m2.size == 65536 && m2.a == 1 &&
	      m2.b == 2 && m2.c == ~0ull && m2.d == 4);
	cb[0] = 99;
	CHECK(ctrl_decode(cb, sizeof(cb), &m2) == -EPROTO);
	CHECK(ctrl_decode(cb, 12, &m2) == -EPROTO);
}

static void patterns(void)
{
	uint8_t a[4096], b[4096];

	pattern_fill(a, sizeof(a), 5);
	pattern_fill(b, sizeof(b), 6);
	CHECK_EQ(pattern_check(a, sizeof(a), 5), -1);
	CHECK(memcmp(a, b, sizeof(a)) != 0);
	CHECK_EQ(pattern_check(a, 1, 5), -1);
	a[1000] ^= 1;
	CHECK_EQ(pattern_check(a, sizeof(a), 5), 1000);
	CHECK(pattern_check(b, sizeof(b), 5) >= 0);
	/* consecutive messages differ early, so a stale buffer shows at once */
	int differ = 0;
	for (uint64_t s = 0; s < 256; s++) {
		uint8_t x[4], y[4];
		pattern_fill(x, 4, s);
		pattern_fill(y, 4, s + 1);
		differ += memcmp(x, y, 4) != 0;
	}
	CHECK_EQ(differ, 256);
}

TEST_MAIN(TEST(percentile_nearest_rank), TEST(summary_figures), TEST(units_and_rates),
	  TEST(peak_bandwidth), TEST(plan_sizes_and_iters), TEST(wire_round_trips), TEST(patterns))
