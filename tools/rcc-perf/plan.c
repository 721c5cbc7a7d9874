/* SPDX-License-Identifier: BSD-3-Clause */
/* The plan both sides walk: test names, sizes and iteration counts. */
#include <errno.h>
#include <string.h>

#include "opts.h"
#include "perf.h"

static const char *const op_names[OP_COUNT] = {
	"send", "write", "write_imm", "read", "cas", "fadd",
};
static const char *const op_titles[OP_COUNT] = {
	"Send",      "RDMA_Write",          "RDMA_Write_Imm",
	"RDMA_Read", "Atomic CMP_AND_SWAP", "Atomic FETCH_AND_ADD",
};

/* perftest's defaults: 1000 ping-pongs, 5000 messages per QP. */
#define DEF_ITERS_LAT 1000u
#define DEF_ITERS_BW 5000u
/* Without -n, points above this size get proportionally fewer iterations
 * (never below MIN_SCALED_ITERS) so that -a stays a matter of seconds. */
#define SCALE_ABOVE (64u << 10)
#define MIN_SCALED_ITERS 100u

const char *op_name(enum perf_op op) { return op < OP_COUNT ? op_names[op] : "?"; }

const char *op_title(enum perf_op op) { return op < OP_COUNT ? op_titles[op] : "?"; }

const char *kind_name(enum perf_kind kind) { return kind == KIND_LAT ? "lat" : "bw"; }

/* Split a comma list and OR the bits each word maps to. */
static int parse_list(const char *s, int (*word)(const char *w, size_t len, uint8_t *bits),
		      uint8_t *out)
{
	uint8_t bits = 0;

	if (!s || !*s)
		return -EINVAL;
	while (*s) {
		const char *end = strchr(s, ',');
		size_t len = end ? (size_t)(end - s) : strlen(s);
		if (!len || word(s, len, &bits))
			return -EINVAL;
		s += len;
		if (*s)
			s++;
	}
	*out = bits;
	return 0;
}

static bool word_is(const char *w, size_t len, const char *name)
{
	return strlen(name) == len && !strncmp(w, name, len);
}

static int op_word(const char *w, size_t len, uint8_t *bits)
{
	if (word_is(w, len, "all")) {
		*bits |= OPS_ALL;
		return 0;
	}
	if (word_is(w, len, "atomic")) {
		*bits |= 1u << OP_CAS | 1u << OP_FADD;
		return 0;
	}
	for (int i = 0; i < OP_COUNT; i++) {
		if (word_is(w, len, op_names[i])) {
			*bits |= 1u << i;
			return 0;
		}
	}
	return -EINVAL;
}

static int kind_word(const char *w, size_t len, uint8_t *bits)
{
	if (word_is(w, len, "all"))
		*bits |= KINDS_ALL;
	else if (word_is(w, len, "lat"))
		*bits |= 1u << KIND_LAT;
	else if (word_is(w, len, "bw"))
		*bits |= 1u << KIND_BW;
	else
		return -EINVAL;
	return 0;
}

int parse_ops(const char *s, uint8_t *ops) { return parse_list(s, op_word, ops); }

int parse_size_list(const char *s, uint32_t *mask)
{
	uint32_t m = 0;
	char word[32];

	if (!s || !*s)
		return -EINVAL;
	while (*s) {
		const char *end = strchr(s, ',');
		size_t len = end ? (size_t)(end - s) : strlen(s);
		uint64_t v;
		if (!len || len >= sizeof(word))
			return -EINVAL;
		memcpy(word, s, len);
		word[len] = 0;
		if (parse_size(word, &v) || !v || v > PERF_MAX_SIZE || (v & (v - 1)))
			return -EINVAL;
		m |= (uint32_t)v; /* a power of two is its own bit */
		s += len;
		if (*s)
			s++;
	}
	*mask = m;
	return 0;
}

int parse_kinds(const char *s, uint8_t *kinds) { return parse_list(s, kind_word, kinds); }

static bool is_atomic(enum perf_op op) { return op == OP_CAS || op == OP_FADD; }

bool plan_runs(const struct perf_params *p, enum perf_op op, enum perf_kind kind,
	       const char **why_not)
{
	const char *why = NULL;

	if (!(p->ops & (1u << op)) || !(p->kinds & (1u << kind)))
		why = "not selected";
	else if (kind == KIND_LAT && op == OP_WRITE && p->cq_mode != RCC_CQ_POLL)
		/* The ping-pong watches memory, which no completion channel reports. */
		why = "write latency polls memory; with -e/--cq-mode use write_imm";
	else if (kind == KIND_LAT && (p->flags & PF_BIDIR))
		why = "latency tests are ping-pongs already (-b is for bandwidth)";
	if (why_not)
		*why_not = why;
	return !why;
}

void plan_sizes(const struct perf_params *p, enum perf_op op, uint32_t *out, int *n)
{
	int k = 0;

	if (is_atomic(op)) {
		out[k++] = PERF_ATOMIC_SIZE;
	} else if (p->flags & PF_SIZE_LIST) {
		for (int b = 0; b < 31; b++)
			if (p->size & (1u << b))
				out[k++] = 1u << b;
	} else if (p->flags & PF_ALL_SIZES) {
		for (uint32_t s = PERF_MIN_ALL_SIZE; s <= PERF_MAX_ALL_SIZE; s <<= 1)
			out[k++] = s;
	} else {
		out[k++] = p->size;
	}
	*n = k;
}

uint32_t plan_max_size(const struct perf_params *p)
{
	uint32_t max = PERF_ATOMIC_SIZE;

	for (int op = 0; op < OP_COUNT; op++) {
		uint32_t sizes[32];
		int n;
		if (!(p->ops & (1u << op)))
			continue;
		plan_sizes(p, op, sizes, &n);
		for (int i = 0; i < n; i++)
			if (sizes[i] > max)
				max = sizes[i];
	}
	return max;
}

uint32_t plan_iters(const struct perf_params *p, enum perf_kind kind, uint32_t size)
{
	uint32_t def = kind == KIND_LAT ? DEF_ITERS_LAT : DEF_ITERS_BW;
	uint64_t scaled;

	if (p->flags & PF_ITERS_SET)
		return p->iters;
	if (size <= SCALE_ABOVE)
		return def;
	scaled = (uint64_t)def * SCALE_ABOVE / size;
	return scaled < MIN_SCALED_ITERS ? MIN_SCALED_ITERS : (uint32_t)scaled;
}

uint32_t plan_warmup(const struct perf_params *p, enum perf_kind kind, uint32_t size)
{
	uint32_t w;

	if (p->flags & PF_WARMUP_SET)
		return p->warmup;
	w = plan_iters(p, kind, size) / 10;
	return w < 1 ? 1 : w > 100 ? 100 : w;
}

int plan_rtt_factor(enum perf_op op) { return op == OP_READ || is_atomic(op) ? 1 : 2; }

const char *plan_check(const struct perf_params *p)
{
	if (!p->ops || (p->ops & ~OPS_ALL))
		return "no valid test selected";
	if (!p->kinds || (p->kinds & ~KINDS_ALL))
		return "neither latency nor bandwidth selected";
	if ((p->flags & PF_SIZE_LIST) && (!p->size || p->size > PERF_MAX_SIZE * 2 - 1))
		return "bad size list";
	if (!(p->flags & (PF_ALL_SIZES | PF_SIZE_LIST)) && (p->size < 1 || p->size > PERF_MAX_SIZE))
		return "size out of range (1 B .. 1 GiB)";
	if ((p->flags & PF_DURATION) ? !p->duration_ms :
				       ((p->flags & PF_ITERS_SET) && p->iters < 2))
		return "need at least 2 iterations or a duration";
	if (!p->qps || p->qps > 1024)
		return "-q must be 1..1024";
	if (!p->tx_depth || !p->rx_depth)
		return "-t and -r must be at least 1";
	if (!p->post_list || p->post_list > p->tx_depth)
		return "-l must be 1..tx depth (-t)";
	if (!p->cq_mod || p->cq_mod > p->tx_depth)
		return "-Q must be 1..tx depth (-t)";
	if (!p->outs)
		return "-o must be at least 1";
	if (p->cq_mode > RCC_CQ_HYBRID)
		return "unknown completion mode";
	if (p->qp_type > RCC_QP_UD)
		return "unknown connection type (-c)";
	if (p->qp_type == RCC_QP_UC && (p->ops & ~OPS_UC))
		return "-c UC carries send, write and write_imm only: READ and atomics need -c RC";
	if (p->qp_type == RCC_QP_UD && (p->ops & ~OPS_UD))
		return "-c UD carries send only (datagrams): WRITE, READ and atomics need -c RC "
		       "(or UC for WRITE)";
	if (p->inline_size != PERF_INLINE_AUTO && p->inline_size > 4096)
		return "-I must be at most 4096";
	if ((p->kinds & (1u << KIND_LAT)) && !(p->kinds & (1u << KIND_BW)) &&
	    (p->qps > 1 || p->post_list > 1))
		return "latency tests use one endpoint and no post list (-q/-l are for bandwidth)";
	for (int op = 0; op < OP_COUNT; op++)
		for (int k = 0; k < KIND_COUNT; k++)
			if (plan_runs(p, op, k, NULL))
				return NULL;
	return "nothing to run with these options (see --help for the combinations)";
}
