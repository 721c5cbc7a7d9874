#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""count-rxe.py -- the arithmetic of bench/perf-rxe.sh's count group.

    count-rxe.py CGDIR N1 N2 [CSV]

CGDIR holds callgrind files written in the Soft-RoCE VM by bench/perf-rxe-vm.sh:
TOOL.TEST.SIZE.N.SIDE (TOOL rcc-perf or perftest, SIDE cli or srv) at N = N1 and
N2 iterations, and empty.N (bench_overhead_static polling an empty verbs CQ N
times).

What is counted: the user-space instructions spent inside the calls the tool
makes into the RDMA library -- for perftest every call from its binary into
libibverbs and the provider (librxe: ibv_post_send, ibv_post_recv and
ibv_poll_cq are inline functions that call the provider directly), for rcc-perf
every call from its own code (tools/) into rcc's (src/, linked statically),
everything below included (rcc's verbs code, libibverbs, librxe, libc). The
tools' own loops and clocks are not the library's cost and are left out
(rcc_now_ns, rcc-perf's clock, is excluded by name; perftest reads the TSC
inline). Per iteration: (count at N2 - count at N1) / (N2 - N1), so set-up,
the first receives posted, warm-up and tear-down cancel out.

Waiting: both tools busy-poll, and under valgrind each side waits for a peer
that is also emulated, so the number of empty polls per iteration depends on
timing, not on the library. They are counted and taken out at their exact
price: the poll calls in the difference, less the polls that returned work
(one per completion the test asks for, per iteration: K below), times the price
of one empty poll measured alone (empty.N): rcc_cq_poll on an empty CQ for
rcc-perf, the provider's poll_cq for perftest (the same function rcc's poll
calls, found by its name in the empty runs). rcc-perf takes up to 16
completions per poll, so K slightly overstates its non-empty polls when two
completions come together (at most one iteration in cq_mod = 100): its figure
is then high by at most one empty poll per hundred iterations.
"""
import collections
import os
import re
import sys

MAIN = re.compile(r'^(rcc-perf|bench_overhead\w*|ib_\w+_lat)$')
LIBOBJ = re.compile(r'^(librcc|libibverbs|librxe|librdmacm)')
RXE = re.compile(r'^librxe')
EXCLUDED = {'rcc_now_ns'}  # rcc-perf's clock: the tool's, not the library's

# Polls that return work, per iteration (see the module comment). perftest's
# latency tests run with TX depth 1, which clamps its CQ moderation to 1: every
# post is signalled and its completion polled. rcc-perf asks for a send
# completion every 100th message of a ping-pong (-Q), every READ/FADD is.
K = {
    ('rcc-perf', 'send'): 1.01, ('rcc-perf', 'write'): 0.01,
    ('rcc-perf', 'read'): 1.0, ('rcc-perf', 'fadd'): 1.0,
    ('perftest', 'send'): 2.0, ('perftest', 'write'): 1.0,
    ('perftest', 'read'): 1.0, ('perftest', 'fadd'): 1.0,
}


def parse(path):
    """Call edges (caller, callee) -> [calls, inclusive Ir]; functions -> (object, file)."""
    names = {}
    ob = fl = fn = None
    cob = cfn = None
    pending = None
    fn_where = {}
    edges = collections.defaultdict(lambda: [0, 0])

    def name(kind, val):
        m = re.match(r'\((\d+)\)(?: (.*))?$', val)
        if not m:
            return val
        if m.group(2) is not None:
            names[kind, m.group(1)] = m.group(2)
        return names[kind, m.group(1)]

    with open(path) as f:
        for line in f:
            line = line.rstrip('\n')
            if pending is not None:
                parts = line.split()
                e = edges[pending[0]]
                e[0] += pending[1]
                e[1] += int(parts[1]) if len(parts) > 1 else 0
                pending = None
                continue
            key, _, val = line.partition('=')
            if key == 'ob':
                ob = name('ob', val)
            elif key == 'fl':
                fl = name('fl', val)
            elif key in ('fi', 'fe', 'cfi', 'cfl'):
                name('fl', val)
            elif key == 'fn':
                fn = name('fn', val)
                fn_where.setdefault((ob, fn), fl)
            elif key == 'cob':
                cob = name('ob', val)
            elif key == 'cfn':
                cfn = name('fn', val)
            elif key == 'calls':
                pending = (((ob, fn), (cob or ob, cfn)), int(val.split()[0]))
                cob = cfn = None
    return edges, fn_where


def base(ob):
    return os.path.basename(ob or '')


def is_tool(fn, where):
    return MAIN.match(base(fn[0])) and '/src/' not in (where.get(fn) or '')


def is_lib(fn, where):
    if LIBOBJ.match(base(fn[0])):
        return True
    return MAIN.match(base(fn[0])) and '/src/' in (where.get(fn) or '')


def library_calls(path):
    """{callee name: [calls, inclusive]} of the calls from the tool into the library."""
    edges, where = parse(path)
    out = collections.defaultdict(lambda: [0, 0])
    for (caller, callee), (c, i) in edges.items():
        if callee[1] in EXCLUDED or not is_tool(caller, where) or not is_lib(callee, where):
            continue
        label = callee[1] if not RXE.match(base(callee[0])) else 'librxe:' + callee[1]
        out[label][0] += c
        out[label][1] += i
    return out, edges, where


def delta(a, b):
    keys = set(a) | set(b)
    return {k: (b.get(k, [0, 0])[0] - a.get(k, [0, 0])[0], b.get(k, [0, 0])[1] - a.get(k, [0, 0])[1])
            for k in keys}


def prices(cgdir, n1, n2):
    """(rcc_cq_poll's empty price, the provider poll's name and empty price)."""
    f1, f2 = (os.path.join(cgdir, 'empty.%d' % n) for n in (n1, n2))
    a, e1, w1 = library_calls(f1)
    b, e2, w2 = library_calls(f2)
    d = delta(a, b)
    c, i = d.get('rcc_cq_poll', (0, 0))
    if c <= 0:
        raise SystemExit('count-rxe: no rcc_cq_poll calls in %s' % f2)
    e_rcc = i / c
    # the provider's poll: the librxe function rcc's code calls most often there
    prov = collections.defaultdict(lambda: [0, 0])
    for edges, where, sign in ((e1, w1, -1), (e2, w2, 1)):
        for (caller, callee), (cc, ii) in edges.items():
            if RXE.match(base(callee[0])) and is_lib(caller, where) and not RXE.match(base(caller[0])):
                prov[callee[1]][0] += sign * cc
                prov[callee[1]][1] += sign * ii
    pname, (pc, pi) = max(prov.items(), key=lambda kv: kv[1][0])
    return e_rcc, 'librxe:' + pname, pi / pc


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    cgdir, n1, n2 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    csv = open(sys.argv[4], 'w') if len(sys.argv) > 4 else None
    dn = n2 - n1
    e_rcc, pname, e_prov = prices(cgdir, n1, n2)
    print('One empty poll: rcc_cq_poll %.1f instructions, the provider\'s poll_cq '
          '(%s) %.1f.' % (e_rcc, pname.split(':')[1], e_prov))
    print('Library instructions per iteration, empty polls taken out (N = %d and %d):\n' % (n1, n2))
    print('| test | size | side | rcc-perf | perftest | ratio | target | empty polls/iter rcc-perf / perftest |')
    print('|---|---:|---|---:|---:|---:|---|---|')
    if csv:
        csv.write('test,size_B,side,rcc_perf_instr,perftest_instr,ratio,rcc_empty_per_iter,'
                  'perftest_empty_per_iter,rcc_empty_price,perftest_empty_price\n')
    detail = []
    for test, size in (('send', 2), ('send', 65536), ('write', 2), ('write', 65536),
                       ('read', 2), ('read', 65536), ('fadd', 8)):
        for side in ('cli', 'srv'):
            res = {}
            for tool in ('rcc-perf', 'perftest'):
                paths = [os.path.join(cgdir, '%s.%s.%d.%d.%s' % (tool, test, size, n, side))
                         for n in (n1, n2)]
                if not all(os.path.exists(p) for p in paths):
                    continue
                d = delta(library_calls(paths[0])[0], library_calls(paths[1])[0])
                poll = 'rcc_cq_poll' if tool == 'rcc-perf' else pname
                price = e_rcc if tool == 'rcc-perf' else e_prov
                k = K[tool, test] if side == 'cli' or test in ('send', 'write') else 0
                empties = d.get(poll, (0, 0))[0] - k * dn
                total = sum(i for _, i in d.values())
                res[tool] = ((total - empties * price) / dn, empties / dn, price)
                per = sorted(((i - (empties * price if name == poll else 0)) / dn, name, c / dn)
                             for name, (c, i) in d.items() if c or i)
                detail.append((tool, test, size, side, per))
            if not res:
                continue
            sz = '64 KiB' if size == 65536 else '%d B' % size
            r, p = res.get('rcc-perf'), res.get('perftest')
            ratio = r[0] / p[0] if r and p and p[0] > 0 else None
            print('| %s | %s | %s | %s | %s | %s | %s | %s / %s |' % (
                test, sz, 'client' if side == 'cli' else 'server',
                '%.0f' % r[0] if r else '-', '%.0f' % p[0] if p else '-',
                '%.2f' % ratio if ratio else '-',
                ('<= 1.05: ' + ('met' if ratio <= 1.05 else 'missed')) if ratio else '',
                '%.1f' % r[1] if r else '-', '%.1f' % p[1] if p else '-'))
            if csv:
                csv.write('%s,%d,%s,%s,%s,%s,%s,%s,%.1f,%.1f\n' % (
                    test, size, side, '%.1f' % r[0] if r else '', '%.1f' % p[0] if p else '',
                    '%.3f' % ratio if ratio else '', '%.2f' % r[1] if r else '',
                    '%.2f' % p[1] if p else '', e_rcc, e_prov))
    print('\nWhere they go (per iteration: calls, instructions; polls net of the empty ones):')
    for tool, test, size, side, per in detail:
        parts = ['%s %.2f x %.0f' % (name, c, i) for i, name, c in sorted(per, reverse=True)
                 if abs(i) >= 0.5]
        print('  %s %s %d %s: %s' % (tool, test, size, side, '; '.join(parts)))


if __name__ == '__main__':
    main()
