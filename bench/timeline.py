#!/usr/bin/env python3
"""Where a same-host round trip's time goes, call by call (bench/README.md, "Timeline").

Reads the dumps a -DLRPC_TIMELINE=ON build writes (runtime/timeline.cc) while lrpc_bench runs
one lrpc path and/or floor_spin, joins each client's marks with its server's by sequence number,
and prints, per path, the spans of a call: call handoff (client rings -> server sees it), server
(sees it -> rings the return), return handoff, client (sees the return -> rings the next call),
and the whole round trip. The two handoffs are on different cores' TSC reads; their sum is not.

  python3 bench/timeline.py [DIR]     (DIR: $LRPC_TIMELINE_DIR or /tmp/lrpc-timeline)
"""
import glob
import os
import statistics
import struct
import sys

HEADER = struct.Struct("<6Q")
RECORD = struct.Struct("<IIQ")
MAGIC = 0x31304C5443505251
PATHS = {"lrpc": (0, 1, 2, 3), "floor_spin": (10, 11, 12, 13)}
SPANS = ("call handoff", "server", "return handoff", "client", "round trip", "both handoffs")


def read_dumps(directory):
    """{mark: {seq: tsc}} per file, and the TSC ticks per ns over all files."""
    marks_by_file, rates = [], []
    for path in sorted(glob.glob(os.path.join(directory, "*"))):
        data = open(path, "rb").read()
        if len(data) < HEADER.size:
            continue
        magic, records, tsc0, ns0, tsc1, ns1 = HEADER.unpack_from(data)
        if magic != MAGIC or len(data) != HEADER.size + records * RECORD.size:
            continue
        if ns1 > ns0:
            rates.append((tsc1 - tsc0) / (ns1 - ns0))
        marks = {}
        for seq, mark, tsc in RECORD.iter_unpack(data[HEADER.size:]):
            if tsc != 0xFFFFFFFFFFFFFFFF:
                marks.setdefault(mark, {})[seq] = tsc
        marks_by_file.append(marks)
    return marks_by_file, (statistics.median(rates) if rates else None)


def merged(marks_by_file, mark):
    out = {}
    for marks in marks_by_file:
        out.update(marks.get(mark, {}))
    return out


def spans(marks_by_file, points, ticks_per_ns):
    ring, ret, call, reply = (merged(marks_by_file, p) for p in points)
    out = {name: [] for name in SPANS}
    for seq in sorted(ring):
        if seq + 1 not in ring or seq not in ret or seq not in call or seq not in reply:
            continue
        c0, s0, s1, c1, c2 = ring[seq], call[seq], reply[seq], ret[seq], ring[seq + 1]
        if not c0 <= c1 <= c2:
            continue  # not one call after the other on one client thread
        ns = [(b - a) / ticks_per_ns for a, b in ((c0, s0), (s0, s1), (s1, c1), (c1, c2), (c0, c2))]
        ns.append(ns[0] + ns[2])
        for name, value in zip(SPANS, ns):
            out[name].append(value)
    return out


def quantile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("LRPC_TIMELINE_DIR", "/tmp/lrpc-timeline")
    marks_by_file, ticks_per_ns = read_dumps(directory)
    if not marks_by_file or ticks_per_ns is None:
        sys.exit(f"no timeline dumps in {directory} (build with -DLRPC_TIMELINE=ON and run lrpc_bench)")
    p50 = {}
    for path, points in PATHS.items():
        s = spans(marks_by_file, points, ticks_per_ns)
        if not s["round trip"]:
            continue
        print(f"{path}: {len(s['round trip'])} calls, ns per call")
        print(f"  {'span':16s} {'p10':>8s} {'p50':>8s} {'p90':>8s} {'mean':>8s}")
        for name in SPANS:
            v = s[name]
            print(f"  {name:16s} {quantile(v, .1):8.1f} {quantile(v, .5):8.1f} {quantile(v, .9):8.1f} "
                  f"{statistics.fmean(v):8.1f}")
        p50[path] = quantile(s["round trip"], .5)
    if len(p50) == 2:
        print(f"lrpc - floor_spin, p50 of the round trip: {p50['lrpc'] - p50['floor_spin']:+.1f} ns")


if __name__ == "__main__":
    main()
