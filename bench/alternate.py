#!/usr/bin/env python3
"""Alternates two lrpc_bench binaries (two builds of a change) on the same cells.

usage: bench/alternate.py OLD NEW FILTER [ROUNDS]

Each round runs OLD, then NEW (the order flips every round), each with five repetitions of
the cells FILTER selects, and prints the medians of every cell. At the end: per cell, each
build's median over the rounds and the median of the per-round differences (NEW - OLD).

Why not the timeline or two table runs: at a slow placement of the two vCPUs the paired cells
of one binary move by tens of ns from one minute to the next, and a timeline build's stamps
change the timing they measure (bench/README.md, "Timeline"); builds run minutes apart
compare two placements, and only alternation shows both the same host.
"""
import json
import statistics
import subprocess
import sys

COUNTERS = ("real_time", "diff_ns", "a_ns", "b_ns", "ratio")


def run(binary, cells):
    out = subprocess.run(
        [binary, f"--benchmark_filter={cells}", "--benchmark_repetitions=5",
         "--benchmark_report_aggregates_only=true", "--benchmark_format=json"],
        check=True, capture_output=True, text=True).stdout
    medians = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") == "median":
            medians[b["run_name"]] = {k: b[k] for k in COUNTERS if k in b}
    return medians


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    old, new, cells = sys.argv[1:4]
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    seen = {"old": [], "new": []}
    for r in range(rounds):
        order = [("old", old), ("new", new)] if r % 2 == 0 else [("new", new), ("old", old)]
        for tag, binary in order:
            m = run(binary, cells)
            seen[tag].append(m)
            for cell, values in sorted(m.items()):
                shown = " ".join(f"{k}={v:.1f}" for k, v in values.items())
                print(f"round {r + 1} {tag} {cell} {shown}", flush=True)
    # The headline counter: the paired difference where there is one, else the time per call.
    print("\ncell: counter, old median, new median, median of (new - old) per round")
    for cell in sorted(seen["old"][0]):
        key = "diff_ns" if "diff_ns" in seen["old"][0][cell] else "real_time"
        o = [m[cell][key] for m in seen["old"] if cell in m]
        n = [m[cell][key] for m in seen["new"] if cell in m]
        d = [b - a for a, b in zip(o, n)]
        print(f"{cell}: {key}, {statistics.median(o):.1f}, {statistics.median(n):.1f}, "
              f"{statistics.median(d):+.1f} [{min(d):+.1f} to {max(d):+.1f}]")


if __name__ == "__main__":
    main()
