/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shared-memory rings of same-host endpoints, driven by a script: both
 * sides write and read through their own views while the "peer" scribbles
 * any control word of the shared header with any value. Whatever it writes,
 * a side must never touch memory outside the ring nor move more than it was
 * given; it may only report -EPROTO. Until the first scribble, every
 * byte read must be the byte written at that stream position (FIFO, nothing
 * lost or duplicated, across the wrap).
 *
 * Script: one opcode byte, then its operands:
 *   0 side len16 niov : side writes len bytes in niov pieces (1..3)
 *   1 side len16 niov : side reads up to len bytes
 *   2 word val64      : scribble control word word%8 (tail/space_wait/head/sleeping x2)
 *   3 side            : arm, wake calls, readiness queries
 *   4 side need16     : side reserves room for need bytes of what it produces
 *   5 side skip16 len16 : side counts what it can consume and peeks len bytes of
 *                       it past the first skip
 *   6 len64 dlen16 desc : a single-copy descriptor a peer put in a frame
 *                       (shm_cma.h), decoded against a request of len bytes:
 *                       accepted only if its entries add up to len exactly
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "transport/tcp/shm_cma.h"
#include "transport/tcp/shm_ring.h"

#define CAP SHM_RING_MIN

static _Alignas(4096) uint8_t region[SHM_HDR_SIZE + 2 * CAP];

struct cursor {
	const uint8_t *p;
	size_t n;
};

static unsigned take(struct cursor *c, unsigned bytes)
{
	unsigned v = 0;
	for (unsigned i = 0; i < bytes && c->n; i++, c->p++, c->n--)
		v |= (unsigned)*c->p << (8 * i);
	return v;
}

static uint8_t stream_byte(int dir, uint64_t pos) { return (uint8_t)(pos * 131 + 7 + dir * 61); }

static void split(uint8_t *buf, size_t len, unsigned niov, struct iovec *iov)
{
	size_t a = len / 3, b = len / 2;
	if (niov == 1) {
		iov[0] = (struct iovec){ buf, len };
	} else if (niov == 2) {
		iov[0] = (struct iovec){ buf, b };
		iov[1] = (struct iovec){ buf + b, len - b };
	} else {
		iov[0] = (struct iovec){ buf, a };
		iov[1] = (struct iovec){ buf + a, 0 }; /* an empty piece in the middle */
		iov[2] = (struct iovec){ buf + a, len - a };
	}
}

static void scribble(unsigned word, uint64_t val)
{
	struct shm_hdr *h = (struct shm_hdr *)region;
	struct shm_dir *d = &h->dir[(word / 4) & 1];
	switch (word % 4) {
	case 0:
		atomic_store(&d->tail, val);
		break;
	case 1:
		atomic_store(&d->space_wait, (uint32_t)val);
		break;
	case 2:
		atomic_store(&d->head, val);
		break;
	default:
		atomic_store(&d->sleeping, (uint32_t)val);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct shm_ring side[2];
	uint64_t wpos[2] = { 0, 0 }, rpos[2] = { 0, 0 }; /* by producing side */
	bool scribbled = false;
	struct cursor c = { data, size };
	uint8_t *buf = malloc(2 * CAP + 16);

	if (!buf)
		return 0;
	memset(region, 0, sizeof(region));
	rcci_shm_ring_init(&side[0], region, CAP, true);
	rcci_shm_ring_init(&side[1], region, CAP, false);
	while (c.n) {
		unsigned op = take(&c, 1) % 7;
		if (op == 0 || op == 1) {
			int s = (int)(take(&c, 1) & 1);
			size_t len = take(&c, 2) % (2 * CAP + 16);
			unsigned niov = take(&c, 1) % 3 + 1;
			struct iovec iov[3];
			split(buf, len, niov, iov);
			if (op == 0) {
				for (size_t i = 0; i < len; i++)
					buf[i] = stream_byte(s, wpos[s] + i);
				long r = rcci_shm_ring_write(&side[s], iov, (int)niov);
				/* More than the ring in one call only when the peer
				 * moved its head meanwhile: the producer counts from
				 * the head it saw last, and a scribbled one can free
				 * room (a lie about the peer's own stream) */
				if (r < -EPROTO || (r < 0 && r != -EPROTO) || r > (long)len ||
				    (r > CAP && !scribbled))
					abort();
				if (r < 0 && !scribbled)
					abort(); /* an honest peer never breaks the ring */
				if (r > 0)
					wpos[s] += (uint64_t)r;
			} else {
				int from = 1 - s; /* s reads what the other side produced */
				long r = rcci_shm_ring_readv(&side[s], iov, (int)niov);
				if ((r < 0 && r != -EPROTO) || r > (long)len || r > CAP)
					abort();
				if (r < 0 && !scribbled)
					abort();
				if (r > 0 && !scribbled) {
					for (long i = 0; i < r; i++)
						if (buf[i] !=
						    stream_byte(from, rpos[from] + (uint64_t)i))
							abort();
				}
				if (r > 0)
					rpos[from] += (uint64_t)r;
				if (!scribbled && rpos[from] > wpos[from])
					abort();
			}
		} else if (op == 2) {
			unsigned word = take(&c, 1);
			uint64_t lo = take(&c, 4), hi = take(&c, 4);
			scribble(word, lo | hi << 32);
			scribbled = true;
		} else if (op == 4) {
			int s = (int)(take(&c, 1) & 1);
			size_t need = take(&c, 2) % (2 * CAP + 16);
			size_t want = need == 0 ? 1 : need > CAP ? CAP : need;
			/* Room: when at least what was asked is free, a room of at
			 * least that (at most the whole ring; counted from the head the
			 * producer saw last, which may be behind), else none. */
			long room = rcci_shm_ring_reserve(&side[s], need);
			if ((room < 0 && room != -EPROTO) || room > CAP ||
			    (room > 0 && (size_t)room < want))
				abort();
			if (room < 0 && !scribbled)
				abort();
			if (!scribbled) {
				uint64_t free_room = CAP - (wpos[s] - rpos[s]);
				if (room ? (uint64_t)room > free_room : free_room >= want)
					abort();
			}
		} else if (op == 6) {
			uint64_t lo = take(&c, 4), hi = take(&c, 4), len = lo | hi << 32;
			size_t dlen = take(&c, 2) % (SHM_CMA_DESC_MAX + 8);
			uint8_t d[SHM_CMA_DESC_MAX + 8];
			struct iovec iov[SHM_CMA_MAX_IOV];
			uint32_t slot, gen;
			int n;
			for (size_t i = 0; i < dlen; i++)
				d[i] = (uint8_t)take(&c, 1);
			if (rcci_shm_cma_desc_decode(d, (uint32_t)dlen, len, &slot, &gen, iov,
						     &n) == 0) {
				uint64_t sum = 0;
				if (slot >= SHM_CMA_SLOTS || n < 1 || n > SHM_CMA_MAX_IOV)
					abort();
				for (int i = 0; i < n; i++) {
					if (iov[i].iov_len > len - sum)
						abort(); /* more than the request, wrapped or not */
					sum += iov[i].iov_len;
				}
				if (sum != len)
					abort();
			}
		} else if (op == 5) {
			int s = (int)(take(&c, 1) & 1), from = 1 - s;
			size_t skip = take(&c, 2) % (2 * CAP + 16);
			size_t len = take(&c, 2) % (2 * CAP + 16);
			/* The bytes at that stream position, none consumed. */
			long have = rcci_shm_ring_rx_avail(&side[s]);
			if ((have < 0 && have != -EPROTO) || have > CAP)
				abort();
			if (have < 0 && !scribbled)
				abort();
			size_t r = rcci_shm_ring_peek(&side[s], have < 0 ? 0 : (size_t)have, skip,
						      buf, len);
			if (r > len || r > CAP)
				abort();
			if (!scribbled) {
				uint64_t there = wpos[from] - rpos[from];
				uint64_t past = skip < there ? there - skip : 0;
				if ((uint64_t)have != there ||
				    (uint64_t)r != (past < len ? past : len))
					abort();
				for (size_t i = 0; i < r; i++)
					if (buf[i] !=
					    stream_byte(from, rpos[from] + skip + (uint64_t)i))
						abort();
			}
		} else {
			int s = (int)(take(&c, 1) & 1);
			(void)rcci_shm_ring_arm(&side[s]);
			(void)rcci_shm_ring_wake_consumer(&side[s]);
			(void)rcci_shm_ring_wake_producer(&side[s]);
			(void)rcci_shm_ring_rx_ready(&side[s]);
			(void)rcci_shm_ring_tx_room(&side[s]);
		}
	}
	free(buf);
	return 0;
}
