/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rcc-mesh's pure logic: wire encoders/decoders (round trips, and rejection of
 * anything truncated or foreign -- those bytes come from peers), the payload
 * pattern (every byte covered, identities distinct), the latency histogram,
 * and the node-list parser.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "histogram.h"
#include "mesh.h"
#include "pattern.h"
#include "wire.h"

/* The parser reports through these; the tests do not need them. */
void complain(const struct mesh *m, const char *fmt, ...)
{
	(void)m;
	(void)fmt;
}

static void hello_round_trip(void)
{
	struct mesh_hello h = { .src = 3,
				.dst = 250,
				.nodes = 256,
				.ops = 3,
				.size = 65536,
				.depth = 1024,
				.list_hash = 0xdeadbeef },
			  g;
	uint8_t buf[HELLO_LEN];

	CHECK_OK(hello_encode(&h, NULL, buf));
	CHECK_OK(hello_decode(buf, sizeof(buf), &g));
	CHECK(!memcmp(&h, &g, sizeof(h)) ||
	      (g.src == 3 && g.dst == 250 && g.nodes == 256 && g.ops == 3 && g.size == 65536 &&
	       g.depth == 1024 && g.list_hash == 0xdeadbeef));
	CHECK_EQ(hello_decode(buf, HELLO_LEN - 1, &g), -EPROTO);
	CHECK_EQ(hello_decode(NULL, 0, &g), -EPROTO);
	buf[0] ^= 1;
	CHECK_EQ(hello_decode(buf, sizeof(buf), &g), -EPROTO);
	buf[0] ^= 1;
	buf[4] = MESH_VERSION + 1;
	CHECK_EQ(hello_decode(buf, sizeof(buf), &g), -EPROTO);
}

/*
 * With a key the hello carries a tag that only that key makes: any byte of the
 * hello changed, another key, or no tag at all (a hello made without the
 * secret) is refused. The whole hello fits a connect request's private data.
 */
static void hello_tag_check(void)
{
	struct mesh_hello h = {
		.src = 1, .dst = 2, .nodes = 3, .ops = 3, .size = 4096, .depth = 64, .list_hash = 7
	};
	uint8_t key[HELLO_KEY_LEN], other[HELLO_KEY_LEN], buf[HELLO_LEN], bare[HELLO_LEN];
	struct mesh_hello g;

	CHECK(HELLO_LEN <= RCC_CONNECT_PRIVATE_DATA_MAX);
	for (size_t i = 0; i < sizeof(key); i++) {
		key[i] = (uint8_t)(i * 7 + 1);
		other[i] = key[i];
	}
	other[31] ^= 0x80;
	CHECK_OK(hello_encode(&h, key, buf));
	CHECK_OK(hello_decode(buf, sizeof(buf), &g));
	CHECK(hello_tag_ok(key, buf));
	CHECK(!hello_tag_ok(other, buf));
	for (size_t i = 0; i < HELLO_LEN; i++) {
		buf[i] ^= 0x01;
		CHECK_MSG(!hello_tag_ok(key, buf), "byte %zu changed, tag still taken", i);
		buf[i] ^= 0x01;
	}
	CHECK_OK(hello_encode(&h, NULL, bare));
	CHECK(!memcmp(bare, buf, HELLO_SIGNED_LEN));
	for (size_t i = HELLO_SIGNED_LEN; i < HELLO_LEN; i++)
		CHECK_EQ(bare[i], 0);
	CHECK(!hello_tag_ok(key, bare));
	/* the tag binds the ranks: the same hello toward another rank differs */
	h.dst = 0;
	CHECK_OK(hello_encode(&h, key, bare));
	CHECK(memcmp(bare + HELLO_SIGNED_LEN, buf + HELLO_SIGNED_LEN, HELLO_TAG_LEN));
}

static void accept_round_trip(void)
{
	uint8_t buf[ACCEPT_LEN];
	uint16_t r, n;
	accept_encode(7, 9, buf);
	CHECK_OK(accept_decode(buf, sizeof(buf), &r, &n));
	CHECK_EQ(r, 7);
	CHECK_EQ(n, 9);
	CHECK_EQ(accept_decode(buf, 3, &r, &n), -EPROTO);
}

static void ctrl_round_trips(void)
{
	uint8_t buf[CTRL_SIZE];
	struct ctrl_msg in, out;

	memset(&in, 0, sizeof(in));
	in.type = CTRL_WELCOME;
	in.from = 12;
	in.u.welcome.target = (struct rcc_remote_mr){ .addr = 0x7f0012345000ull,
						      .length = 65536,
						      .rkey = 0xabcdef01 };
	in.u.welcome.stride = 4096;
	in.u.welcome.slots = 16;
	uint32_t len = ctrl_encode(&in, buf);
	CHECK_OK(ctrl_decode(buf, len, &out));
	CHECK_EQ(out.type, CTRL_WELCOME);
	CHECK_EQ(out.from, 12);
	CHECK_EQ(out.u.welcome.target.addr, 0x7f0012345000ull);
	CHECK_EQ(out.u.welcome.target.rkey, 0xabcdef01);
	CHECK_EQ(out.u.welcome.slots, 16);
	/* every truncation of every message type is refused */
	enum ctrl_type types[] = { CTRL_WELCOME, CTRL_CREDIT, CTRL_FIN,
				   CTRL_ROW_TX,  CTRL_ROW_RX, CTRL_DONE };
	for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		memset(&in, 0, sizeof(in));
		in.type = types[t];
		in.u.row.tx.lat_max = 123456789;
		in.u.done.failed[31] = 0x80;
		len = ctrl_encode(&in, buf);
		CHECK(len <= CTRL_SIZE);
		CHECK_OK(ctrl_decode(buf, len, &out));
		CHECK_EQ(out.type, types[t]);
		for (uint32_t cut = 0; cut < len; cut++)
			CHECK_EQ(ctrl_decode(buf, cut, &out), -EPROTO);
	}
	in.type = CTRL_ROW_TX;
	in.u.row = (struct ctrl_row){
		.src = 1,
		.dst = 2,
		.tx = { .msgs = { 5, 6 }, .bytes = 7, .lat_p999 = 99, .path = MESH_PATH_SHM }
	};
	len = ctrl_encode(&in, buf);
	CHECK_OK(ctrl_decode(buf, len, &out));
	CHECK_EQ(out.u.row.tx.msgs[1], 6);
	CHECK_EQ(out.u.row.tx.lat_p999, 99);
	CHECK_EQ(out.u.row.tx.path, MESH_PATH_SHM);
	/* the path names round-trip; a code this build does not know prints as "-" */
	const char *names[] = { "tcp", "shm", "verbs" };
	for (int i = 0; i < 3; i++)
		CHECK(!strcmp(mesh_path_name(mesh_path_code(names[i])), names[i]));
	CHECK_EQ(mesh_path_code("none"), MESH_PATH_UNKNOWN);
	CHECK(!strcmp(mesh_path_name(200), "-"));
	buf[5] = 99; /* unknown type */
	CHECK_EQ(ctrl_decode(buf, len, &out), -EPROTO);
	/* random garbage never crashes, and rarely decodes */
	srand(1);
	for (int i = 0; i < 10000; i++) {
		for (int k = 0; k < CTRL_SIZE; k++)
			buf[k] = (uint8_t)rand();
		(void)ctrl_decode(buf, (size_t)(rand() % (CTRL_SIZE + 1)), &out);
	}
}

static void pattern_covers_every_byte(void)
{
	size_t sizes[] = { 1, 7, 8, 15, 16, 17, 24, 100, 4096 };
	uint8_t buf[4096], want;
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t len = sizes[s];
		struct pat_id id = { .src = 1, .dst = 2, .stream = 1, .label = 77 };
		pattern_fill(buf, len, &id);
		CHECK_EQ(pattern_check(buf, len, &id, &want), -1);
		for (size_t off = 0; off < len; off++) {
			buf[off] ^= 0x10;
			CHECK_EQ(pattern_check(buf, len, &id, &want), (long)off);
			CHECK_EQ(want, buf[off] ^ 0x10);
			buf[off] ^= 0x10;
		}
	}
}

static void pattern_identities_differ(void)
{
	uint8_t a[64], b[64], want;
	struct pat_id id = { .src = 1, .dst = 2, .stream = 0, .label = 5 };
	struct pat_id other[] = { { 2, 1, 0, 5 }, { 1, 3, 0, 5 }, { 1, 2, 1, 5 }, { 1, 2, 0, 6 } };
	pattern_fill(a, sizeof(a), &id);
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
		pattern_fill(b, sizeof(b), &other[i]);
		CHECK(pattern_check(b, sizeof(b), &id, &want) >= 0);
	}
	struct pat_id claimed;
	CHECK(pattern_header(a, sizeof(a), &claimed));
	CHECK_EQ(claimed.label, 5);
	CHECK_EQ(claimed.dst, 2);
	CHECK(!pattern_header(a, 8, &claimed));
}

static void histogram_percentiles(void)
{
	struct histogram *h = malloc(sizeof(*h));
	CHECK(h);
	hist_init(h);
	CHECK_EQ(hist_percentile(h, 50), 0);
	for (uint64_t v = 1; v <= 100000; v++)
		hist_add(h, v * 1000); /* 1 us .. 100 ms */
	uint64_t p50 = hist_percentile(h, 50), p99 = hist_percentile(h, 99);
	CHECK(p50 >= 50000000ull && p50 <= 50000000ull * 104 / 100);
	CHECK(p99 >= 99000000ull && p99 <= 99000000ull * 104 / 100);
	CHECK_EQ(hist_percentile(h, 100), 100000000ull);
	hist_add(h, UINT64_MAX); /* the largest value still has a bucket */
	CHECK_EQ(hist_percentile(h, 100), UINT64_MAX);
	free(h);
}

static void node_lists(void)
{
	struct node *nodes = NULL, nd;
	char err[300];
	int n = 0;

	CHECK_OK(nodes_from_list("a:1,10.0.0.2:7471,[::1]:9", &nodes, &n, err, sizeof(err)));
	CHECK_EQ(n, 3);
	CHECK(!strcmp(nodes[2].addr, "[::1]:9"));
	CHECK(!strcmp(nodes[1].host, "10.0.0.2"));
	CHECK_EQ(nodes_from_list("b:2,a:1", &nodes, &n, err, sizeof(err)), -EINVAL); /* dup a:1 */
	free(nodes);
	const char *bad[] = { "", "host", "host:", ":1", "h:0", "h:65536", "h:1x", "[::1]9",
			      "a:b:c",
			      /* control characters: a peer's text, never a host */
			      "x\033[2J:1", "a\nforged:1", "[::1\t]:1", "h\177:1" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_MSG(node_parse(bad[i], &nd, err, sizeof(err)) == -EINVAL, "accepted '%s'",
			  bad[i]);
}

TEST_MAIN(TEST(hello_round_trip), TEST(hello_tag_check), TEST(accept_round_trip),
	  TEST(ctrl_round_trips), TEST(pattern_covers_every_byte), TEST(pattern_identities_differ),
	  TEST(histogram_percentiles), TEST(node_lists))
