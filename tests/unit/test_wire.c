/* SPDX-License-Identifier: BSD-3-Clause */
/* The tcp transport's wire codec: round trips, and every malformed header refused. */
#include "harness.h"
#include "rcc/util.h"
#include "transport/tcp/wire.h"

static struct wire_hdr sample(uint8_t type, uint8_t flags, uint32_t len)
{
	struct wire_hdr h = { .type = type,
			      .flags = flags,
			      .len = len,
			      .msn = 0x01020304,
			      .ack = 0xa0b0c0d0,
			      .raddr = 0x1122334455667788ull,
			      .rkey = 0xdeadbeef,
			      .imm = 0x0badf00d,
			      .total = len };
	return h;
}

static bool hdr_eq(const struct wire_hdr *a, const struct wire_hdr *b)
{
	return a->type == b->type && a->flags == b->flags && a->status == b->status &&
	       a->len == b->len && a->msn == b->msn && a->ack == b->ack && a->raddr == b->raddr &&
	       a->rkey == b->rkey && a->imm == b->imm && a->total == b->total;
}

static void round_trip_every_type(void)
{
	struct wire_hdr in[] = {
		sample(WIRE_SEND, WIRE_F_FIRST | WIRE_F_LAST | WIRE_F_IMM, 100),
		sample(WIRE_WRITE, WIRE_F_FIRST, 4096),
		sample(WIRE_READ_REQ, 0, 0),
		sample(WIRE_ATOMIC_REQ, WIRE_F_CAS, WIRE_ATOMIC_REQ_LEN),
		sample(WIRE_READ_RESP, WIRE_F_LAST, 10),
		sample(WIRE_ATOMIC_RESP, 0, WIRE_ATOMIC_RESP_LEN),
		sample(WIRE_ACK, 0, 0),
		sample(WIRE_CLOSE, 0, 0),
	};
	in[2].total = 1 << 20;
	in[4].total = 0;
	struct wire_hdr nak = sample(WIRE_NAK, 0, 0);
	nak.status = WIRE_NAK_RNR;
	nak.imm = 12;
	for (size_t i = 0; i <= sizeof(in) / sizeof(in[0]); i++) {
		const struct wire_hdr *h = i < sizeof(in) / sizeof(in[0]) ? &in[i] : &nak;
		uint8_t buf[WIRE_HDR_LEN];
		struct wire_hdr out;
		rcci_wire_hdr_encode(h, buf);
		CHECK_MSG(rcci_wire_hdr_decode(buf, &out) == 0, "type %u refused", h->type);
		CHECK(hdr_eq(h, &out));
	}
}

/* The encoding is explicit little endian, field by field. */
static void layout_is_fixed(void)
{
	struct wire_hdr h = sample(WIRE_WRITE, WIRE_F_FIRST | WIRE_F_LAST, 16);
	uint8_t b[WIRE_HDR_LEN];
	rcci_wire_hdr_encode(&h, b);
	CHECK_EQ(b[0], WIRE_WRITE);
	CHECK_EQ(b[1], WIRE_F_FIRST | WIRE_F_LAST);
	CHECK_EQ(b[4], 16);
	CHECK_EQ(b[8], 0x04);
	CHECK_EQ(b[11], 0x01);
	CHECK_EQ(b[16], 0x88);
	CHECK_EQ(b[23], 0x11);
	CHECK_EQ(b[24], 0xef);
	CHECK_EQ(b[36] | b[37] | b[38] | b[39], 0);
}

static bool refused(struct wire_hdr h)
{
	uint8_t buf[WIRE_HDR_LEN];
	struct wire_hdr out;
	rcci_wire_hdr_encode(&h, buf);
	return rcci_wire_hdr_decode(buf, &out) == -EPROTO;
}

static void malformed_headers(void)
{
	struct wire_hdr h;

	CHECK(refused(sample(0, 0, 0)));
	CHECK(refused(sample(200, 0, 0)));
	CHECK(refused(sample(WIRE_SEND, 0x80, 10)));                         /* unknown flag */
	CHECK(refused(sample(WIRE_SEND, WIRE_F_FIRST, WIRE_FRAME_MAX + 1))); /* too long */
	h = sample(WIRE_SEND, WIRE_F_FIRST, 100);
	h.total = 50; /* a chunk longer than its message */
	CHECK(refused(h));
	CHECK(refused(sample(WIRE_SEND, WIRE_F_FIRST | WIRE_F_IMM, 10))); /* imm before last */
	h = sample(WIRE_WRITE, WIRE_F_FIRST | WIRE_F_LAST, 10);
	h.raddr = UINT64_MAX - 4; /* wraps around */
	CHECK(refused(h));
	CHECK(refused(sample(WIRE_READ_REQ, 0, 8)));     /* requests carry no payload */
	CHECK(refused(sample(WIRE_ATOMIC_REQ, 0, 8)));   /* operands are 16 bytes */
	CHECK(refused(sample(WIRE_ATOMIC_RESP, 0, 16))); /* a result is 8 */
	CHECK(refused(sample(WIRE_ACK, 0, 1)));
	h = sample(WIRE_NAK, 0, 0);
	h.status = 0;
	CHECK(refused(h));
	h.status = 99;
	CHECK(refused(h));
	h.status = WIRE_NAK_RNR;
	h.imm = 32; /* timer codes are 0..31 */
	CHECK(refused(h));
	h = sample(WIRE_READ_RESP, WIRE_F_FIRST, 10);
	h.status = WIRE_NAK_REM_ACCESS; /* an error response must be an empty LAST */
	CHECK(refused(h));
	h = sample(WIRE_SEND, WIRE_F_FIRST, 10);
	h.total = RCC_MAX_MSG_SIZE + 1;
	CHECK(refused(h));

	uint8_t buf[WIRE_HDR_LEN];
	struct wire_hdr out;
	rcci_wire_hdr_encode(&h, buf);
	buf[37] = 1; /* reserved bytes must be zero */
	CHECK_EQ(rcci_wire_hdr_decode(buf, &out), -EPROTO);
}

static void handshake(void)
{
	uint8_t b[WIRE_HS_HDR_LEN];
	struct wire_hs in = { .version = WIRE_VERSION,
			      .kind = WIRE_HS_ACCEPT,
			      .pdata_len = 192,
			      .max_rd_atomic = 16 },
		       out;
	rcci_wire_hs_encode(&in, b);
	CHECK_OK(rcci_wire_hs_decode(b, &out));
	CHECK(in.version == out.version && in.kind == out.kind && in.pdata_len == out.pdata_len &&
	      in.max_rd_atomic == out.max_rd_atomic);

	struct wire_hs bad = in;
	bad.pdata_len = RCC_ACCEPT_PRIVATE_DATA_MAX + 1;
	rcci_wire_hs_encode(&bad, b);
	CHECK_EQ(rcci_wire_hs_decode(b, &out), -EPROTO);
	bad = in;
	bad.kind = WIRE_HS_HELLO;
	bad.pdata_len = RCC_CONNECT_PRIVATE_DATA_MAX + 1;
	rcci_wire_hs_encode(&bad, b);
	CHECK_EQ(rcci_wire_hs_decode(b, &out), -EPROTO);
	bad = in;
	bad.version = 2;
	rcci_wire_hs_encode(&bad, b);
	CHECK_EQ(rcci_wire_hs_decode(b, &out), -EPROTO);
	bad = in;
	bad.kind = 9;
	rcci_wire_hs_encode(&bad, b);
	CHECK_EQ(rcci_wire_hs_decode(b, &out), -EPROTO);
	bad = in;
	bad.max_rd_atomic = 0;
	rcci_wire_hs_encode(&bad, b);
	CHECK_EQ(rcci_wire_hs_decode(b, &out), -EPROTO);
	rcci_wire_hs_encode(&in, b);
	b[0] = 'X'; /* not our magic */
	CHECK_EQ(rcci_wire_hs_decode(b, &out), -EPROTO);
}

/* The shared-memory part of an ACCEPT: every field where wire.h puts it,
 * the region's layout in the last four bytes (0 there from builds that
 * called it reserved), and back. */
static void shm_accept(void)
{
	struct wire_shm_accept in = { .id = { .netns_dev = 0x0102030405060708ull,
					      .netns_ino = 0x1112131415161718ull },
				      .cap = 1u << 18,
				      .layout = 0xa1b2c3d4u },
			       out;
	uint8_t b[WIRE_SHM_ACCEPT_LEN];

	for (int i = 0; i < 16; i++) {
		in.id.boot_id[i] = (uint8_t)(0x20 + i);
		in.name[i] = (uint8_t)(0x40 + i);
		in.token[i] = (uint8_t)(0x60 + i);
	}
	rcci_wire_shm_accept_encode(&in, b);
	CHECK(!memcmp(b, in.id.boot_id, 16) && rcc_get_le64(b + 16) == in.id.netns_dev &&
	      rcc_get_le64(b + 24) == in.id.netns_ino);
	CHECK(!memcmp(b + 32, in.name, 16) && !memcmp(b + 48, in.token, 16));
	CHECK_EQ(rcc_get_le32(b + 64), in.cap);
	CHECK_EQ(rcc_get_le32(b + 68), in.layout);
	memset(&out, 0xee, sizeof(out));
	rcci_wire_shm_accept_decode(b, &out);
	CHECK(!memcmp(&out.id.boot_id, in.id.boot_id, 16) && out.id.netns_dev == in.id.netns_dev &&
	      out.id.netns_ino == in.id.netns_ino);
	CHECK(!memcmp(out.name, in.name, 16) && !memcmp(out.token, in.token, 16));
	CHECK_EQ(out.cap, in.cap);
	CHECK_EQ(out.layout, in.layout);
}

TEST_MAIN(TEST(round_trip_every_type), TEST(layout_is_fixed), TEST(malformed_headers),
	  TEST(handshake), TEST(shm_accept))
