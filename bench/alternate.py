#!/usr/bin/env python3
"""Alternates two lrpc_bench binaries (two builds of a change) on the same cells.

usage: bench/alternate.py OLD NEW FILTER [ROUNDS] [FAST_NS]

Each round runs OLD, then NEW (the order flips every round), each with five repetitions of
the cells FILTER selects. Every repetition of a paired cell is filed by the placement it saw:
fast when its floor (b_ns) was under FAST_NS (default 200), else slow. At the end, per cell
and placement: each build's number of repetitions, median [quartiles] of the headline
counter, the floor's median, and the difference of the two builds' medians (NEW - OLD).

Why not the timeline or two table runs: the placement of the two vCPUs changes from minute to
minute (a floor of about 90 ns at one, 300-450 ns at another), the paired overhead differs
between them, and a timeline build's stamps change the timing they measure (bench/README.md,
"Timeline"). Builds run minutes apart compare two placements; only alternation, with each
repetition filed by its own placement, compares like with like.
"""
import collections
import json
import statistics
import subprocess
import sys


def run(binary, cells):
    """Each repetition of each cell: (cell, headline value, floor ns or None)."""
    out = subprocess.run(
        [binary, f"--benchmark_filter={cells}", "--benchmark_repetitions=5", "--benchmark_format=json"],
        check=True, capture_output=True, text=True).stdout
    reps = []
    for b in json.loads(out)["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        cell = b["run_name"].split("/manual")[0]
        if "diff_ns" in b:
            reps.append((cell, b["diff_ns"], b.get("b_ns")))
        else:
            reps.append((cell, b["real_time"], None))
    return reps


def quartiles(values):
    v = sorted(values)
    return statistics.median(v), v[len(v) // 4], v[(3 * len(v)) // 4]


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    old, new, cells = sys.argv[1:4]
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    fast_ns = float(sys.argv[5]) if len(sys.argv) > 5 else 200.0
    # (cell, placement) -> build -> [(value, floor)]
    seen = collections.defaultdict(lambda: {"old": [], "new": []})
    for r in range(rounds):
        order = [("old", old), ("new", new)] if r % 2 == 0 else [("new", new), ("old", old)]
        for tag, binary in order:
            for cell, value, floor in run(binary, cells):
                placement = "-" if floor is None else ("fast" if floor < fast_ns else "slow")
                seen[(cell, placement)][tag].append((value, floor))
                shown = f"{value:.1f}" + ("" if floor is None else f" floor={floor:.1f}")
                print(f"round {r + 1} {tag} {cell} {shown}", flush=True)
    print("\ncell placement: old n, median [quartiles]; new n, median [quartiles]; new - old; floor old/new")
    for (cell, placement), builds in sorted(seen.items()):
        parts = []
        medians = {}
        for tag in ("old", "new"):
            reps = builds[tag]
            if not reps:
                parts.append(f"{tag} n=0")
                continue
            med, lo, hi = quartiles([v for v, _ in reps])
            medians[tag] = med
            parts.append(f"{tag} n={len(reps)} {med:.1f} [{lo:.1f}..{hi:.1f}]")
        diff = f"{medians['new'] - medians['old']:+.1f}" if len(medians) == 2 else "n/a"
        floors = "/".join(
            f"{statistics.median(f for _, f in builds[t]):.0f}" if builds[t] and builds[t][0][1] is not None else "-"
            for t in ("old", "new"))
        print(f"{cell} {placement}: {'; '.join(parts)}; {diff}; floor {floors}")


if __name__ == "__main__":
    main()
