#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Writes the seed corpora: well-formed frames and handshakes that the
fuzzers mutate from (the byte layouts are documented in
src/transport/tcp/wire.h)."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
SEND, WRITE, READ_REQ, ATOMIC_REQ, READ_RESP, ATOMIC_RESP, ACK, NAK, CLOSE = range(1, 10)
FIRST, LAST, IMM, CAS = 1, 2, 4, 16


def hdr(typ, flags=0, status=0, length=0, msn=0, ack=0, raddr=0, rkey=0, imm=0, total=0):
    return struct.pack("<BBHIIIQIIII", typ, flags, status, length, msn, ack, raddr, rkey,
                       imm, total, 0)


def hs(kind, pdata=b"", rd=16, flags=0, ext=b""):
    return b"RCCt" + struct.pack("<HHHHI", 1, kind, len(pdata), flags, rd) + pdata + ext


HS_F_SHM = 1


def shm_accept(cap=1 << 18, layout=0):
    """an ACCEPT's shared-memory part: identity, socket name, token, capacity, layout"""
    return (bytes(range(16)) + struct.pack("<QQ", 0x1234, 0xf0000001) + b"N" * 16 + b"T" * 16
            + struct.pack("<II", cap, layout))


streams = {
    "send": hdr(SEND, FIRST | LAST, length=5, total=5) + b"hello",
    "send_imm_two": hdr(SEND, FIRST | LAST | IMM, length=3, total=3, imm=7) + b"abc"
    + hdr(SEND, FIRST | LAST, length=0, msn=1),
    "send_chunks": hdr(SEND, FIRST, length=4, total=8) + b"1234"
    + hdr(SEND, LAST, length=4, total=8) + b"5678",
    "write": hdr(WRITE, FIRST | LAST, length=8, total=8, raddr=0x1000, rkey=0x1234) + b"x" * 8,
    "read_req": hdr(READ_REQ, raddr=0x1000, rkey=0x1234, total=64),
    "atomic": hdr(ATOMIC_REQ, CAS, length=16, raddr=0x1000, rkey=0x1234) + b"\0" * 16,
    "ack_close": hdr(ACK) + hdr(CLOSE),
    "nak_rnr": hdr(NAK, status=1, imm=12),
    "too_long": hdr(SEND, FIRST | LAST, length=300, total=300) + b"y" * 300,
    "empty": b"",
}
wires = {
    "hdr_send": hdr(SEND, FIRST | LAST, length=5, total=5),
    "hdr_pair": hdr(WRITE, FIRST, length=8, total=16, raddr=8) + hdr(READ_RESP, LAST, length=4),
    "hs_hello": hs(1, b"pd"),
    "hs_accept": hs(2, b"x" * 192),
    "hs_reject": hs(3, b"no", 0),
    "hs_accept_shm": hs(2, b"pd", flags=HS_F_SHM, ext=shm_accept()),
    "hs_accept_shm_layout": hs(2, flags=HS_F_SHM, ext=shm_accept(layout=7)),
}
# The env bootstrap's rendezvous frames (src/session/boot_wire.h).
CHALLENGE, HELLO, WELCOME, CONTRIB, RESULT, ABORT = range(1, 7)


BOOT_VERSION = 2  # boot_wire.h


def boot(typ, payload, version=BOOT_VERSION):
    return struct.pack(">HBBI", 0x5242, version, typ, len(payload)) + payload


def result(rnd, blobs):
    return struct.pack(">II", rnd, len(blobs)) + b"".join(
        struct.pack(">H", len(b)) + b for b in blobs)


boots = {
    "challenge": boot(CHALLENGE, b"n" * 32 + b"\1"),
    "hello": boot(HELLO, struct.pack(">II", 1, 4) + b"c" * 32 + b"p" * 32),
    "welcome_contrib": boot(WELCOME, b"w" * 64) + boot(CONTRIB, struct.pack(">I", 0) + b"127.0.0.1:7101"),
    "result": boot(RESULT, result(0, [b"10.0.0.1:1", b"", b"10.0.0.3:3", b"x" * 40])),
    "abort": boot(ABORT, b"rank 3 never arrived"),
    "garbage": b"GET / HTTP/1.0\r\n\r\n",
    "older_release": boot(HELLO, struct.pack(">II", 1, 4) + b"c" * 32 + b"p" * 32, version=1),
}


# fuzz_shm scripts (tests/fuzz/fuzz_shm.c): write/read ops by side, scribbles of
# the shared control words.
def w(side, n, niov=1):
    return struct.pack("<BBHB", 0, side, n, niov - 1)


def r(side, n, niov=1):
    return struct.pack("<BBHB", 1, side, n, niov - 1)


def scribble(word, val):
    return struct.pack("<BBQ", 2, word, val)


def reserve(side, need):
    return struct.pack("<BBH", 4, side, need)


def peek(side, skip, n):
    return struct.pack("<BBHH", 5, side, skip, n)


def cma_desc(length, slot, gen, entries, count=None, reserved=0):
    """op 6: a single-copy descriptor (shm_cma.h) against a request of length bytes"""
    d = struct.pack("<IIII", slot, gen, len(entries) if count is None else count, reserved)
    d += b"".join(struct.pack("<QQ", a, n) for a, n in entries)
    return struct.pack("<BQH", 6, length, len(d)) + d


shms = {
    # single-copy descriptors: whole, split, short of the request, a count that
    # lies, a slot out of range, entries whose sum wraps past 2^64 to the length
    "cma_desc": cma_desc(1 << 20, 3, 7, [(0x7f0000000000, 1 << 20)])
    + cma_desc(1 << 17, 31, 1, [(0x1000, 1 << 16), (0x9000, 1 << 16)])
    + cma_desc(1 << 17, 0, 1, [(0x1000, 1 << 16)]) + cma_desc(100, 0, 1, [(0, 100)], count=2)
    + cma_desc(100, 32, 1, [(0, 100)]) + cma_desc(100, 0, 1, [(0, 100)], reserved=1),
    "cma_desc_wrap": cma_desc(2**64 - 1, 0, 1, [(0, 2**64 - 1), (0, 2**64 - 1), (0, 1)]),
    "ping_pong": w(0, 100) + r(1, 100) + w(1, 8) + r(0, 8),
    "wrap": w(0, 3000) + r(1, 3000) + w(0, 3000, 3) + r(1, 1000, 2) + r(1, 5000, 3),
    "full": w(0, 5000) + w(0, 10) + struct.pack("<BB", 3, 0) + r(1, 4096) + w(0, 10),
    "tail_ahead": w(0, 10) + scribble(0, 1 << 40) + r(1, 64),
    "tail_ahead_big": w(0, 10) + scribble(0, 1 << 40) + r(1, 8000, 2),
    "head_behind": w(1, 4096) + scribble(6, 0xFFFFFFFFFFFFFFFF) + w(1, 1),
    "flags": scribble(3, 7) + scribble(5, 1) + w(0, 1) + r(1, 1) + struct.pack("<BB", 3, 1),
    # room for whole frames: enough, too little (the producer then waits), the
    # whole ring, more than the ring
    "reserve": w(0, 3000) + reserve(0, 1000) + reserve(0, 2000) + r(1, 2000) + reserve(0, 3000)
    + reserve(0, 4096) + reserve(0, 5000) + reserve(0, 0) + r(1, 1000) + reserve(1, 4096),
    # room counted from the head the producer saw last: after the consumer
    # freed more, a small reserve answers from the old head (less than free,
    # enough), a larger one loads the head again (libFuzzer found the check
    # that asked for all the free room)
    "reserve_stale": w(0, 3000) + reserve(0, 1000) + r(1, 2000) + reserve(0, 500)
    + reserve(0, 2000) + w(0, 3000) + reserve(0, 100),
    # a head scribbled while the producer counts from the one it saw: a write
    # fills the ring from the old head, then takes the room the lie frees
    # (libFuzzer: the check that a write never moves more than the ring)
    "head_lie_late": r(1, 4096) + scribble(2, 1795) + w(0, 8079),
    # room asked of a ring whose consumer's head is ahead of what was produced:
    # -EPROTO, as a write says (libFuzzer found it said -1)
    "reserve_broken": w(0, 10) + scribble(2, 1 << 40) + reserve(0, 100),
    # peeks at and past the head, across the wrap, at and beyond the end
    "peek": w(0, 3000) + peek(1, 0, 40) + peek(1, 40, 100) + peek(1, 2990, 100) + r(1, 2000)
    + w(0, 2000) + peek(1, 1500, 2000) + peek(1, 3000, 8) + peek(1, 0, 3000) + r(1, 3000)
    + peek(1, 0, 10),
}


# fuzz_ud: datagram address blobs (src/core/ud_addr.c) and the tcp transport's
# datagram header (src/transport/tcp/ud_wire.h).
def ud_addr(kind, qpn, gid, lid_port, route, qkey=0x52434355):
    b = b"RU" + struct.pack("<BBII", 1, kind, qkey, qpn) + gid + struct.pack("<HB", lid_port, route)
    return b + bytes([(sum(b) & 0xFF) ^ 0x5A])


def ud_dgram(op, payload, imm=0, qkey=0x52434355, src=0x1234, dst=0x5678, flags=0):
    return b"RCud" + struct.pack("<BBBBIIIII", 1, op, flags, 0, qkey, src, dst, imm,
                                 len(payload)) + payload


V4 = bytes(10) + b"\xff\xff" + bytes([10, 0, 2, 15])
uds = {
    "addr_tcp4": ud_addr(2, 0x1234, V4, 40000, 0),
    "addr_tcp6": ud_addr(2, 0x99, bytes(15) + b"\x01", 7471, 0),
    "addr_verbs": ud_addr(1, 0x11, V4, 0, 0x80),
    "addr_ib_lid": ud_addr(1, 0x11, bytes(16), 7, 3),
    "dgram_send": ud_dgram(1, b"hello"),
    "dgram_imm": ud_dgram(2, b"x" * 64, imm=0xdeadbeef, flags=1),
    "dgram_empty": ud_dgram(1, b""),
}

# fuzz_chan: the message channel's header (src/session/chan_wire.h).
def chan(kind, credits, payload=b"", version=1):
    return struct.pack("<BBHI", kind, version, 0, credits) + payload


chans = {
    "msg": chan(1, 0, b"hello"),
    "msg_credits": chan(1, 7, b"x" * 256),
    "credit": chan(2, 8),
    "credit_payload": chan(2, 1, b"z"),
    "version2": chan(1, 0, b"a", version=2),
    "short": b"\x01\x01\x00",
}
# fuzz_mesh: rcc-mesh's hello, accept data and control messages
# (tools/rcc-mesh/wire.h), little-endian.
def mesh_hello(version=3, tag=bytes(16), src=1, dst=2):
    return struct.pack("<IBBHHHIII", 0x4853454D, version, 3, src, dst, 3, 4096, 64,
                       0xdeadbeef) + tag


meshes = {
    "hello": mesh_hello(),
    "hello_tagged": mesh_hello(tag=bytes(range(16))),
    "hello_v2": mesh_hello(version=2, tag=b""),
    "hello_short": mesh_hello()[:30],
    "accept": struct.pack("<IBBHH", 0x4853454D, 3, 0, 2, 3),
    "ctrl_credit": struct.pack("<IBBH", 0x4853454D, 3, 2, 1) + bytes(16),
}
for name, items in (("stream", streams), ("wire", wires), ("boot", boots), ("shm", shms),
                    ("ud", uds), ("chan", chans), ("mesh", meshes)):
    d = os.path.join(HERE, "corpus", name)
    os.makedirs(d, exist_ok=True)
    for key, blob in items.items():
        with open(os.path.join(d, key), "wb") as f:
            f.write(blob)
