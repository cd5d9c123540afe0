#!/usr/bin/env python3
"""Plots lrpc_bench's curves (Echo/*, Sink/*, Throughput/*) from its JSON with gnuplot.

Usage: make_curves.py CURVES.json OUT_DIR

Writes into OUT_DIR: rtt_vs_size.png, bandwidth_vs_size.png, throughput_vs_threads.png (those
with data) and curves.md (the numbers, and r_max and n1/2 fitted to the Sink times).

Bandwidth model (Hockney): a one-way transfer of n bytes takes T(n) = t0 + n / r_max, so the
bandwidth n / T(n) tends to r_max and reaches half of it at n1/2 = t0 * r_max. Both come from
a least-squares line through the Sink times.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile


def load(path):
    with open(path) as f:
        doc = json.load(f)
    echo, sink, thr, errors = {}, {}, {}, []
    step = {}  # path -> list of (cell_ns, over_ns, step_ns), one per repetition
    for b in doc.get("benchmarks", []):
        if b.get("run_type", "iteration") != "iteration":
            continue
        name = b.get("run_name", b["name"])
        parts = [p for p in name.split("/") if p not in ("real_time", "manual_time")]
        if b.get("error_occurred"):
            errors.append(f"{name}: {b.get('error_message', 'error')}")
            continue
        if parts[0] in ("Echo", "Sink") and len(parts) >= 3:
            table = echo if parts[0] == "Echo" else sink
            table.setdefault(parts[1], {})[int(parts[2])] = b["real_time"]
        elif parts[0] == "CellStep" and len(parts) >= 2:
            step.setdefault(parts[1], []).append((b.get("cell_ns", 0), b.get("over_ns", 0), b.get("step_ns", 0)))
        elif parts[0] == "Throughput" and len(parts) >= 2:
            threads = b.get("threads", 1)
            thr.setdefault(parts[1], {})[threads] = b.get("items_per_second", 0.0)
    return echo, sink, thr, step, errors


def fit(points):
    """Least squares T = t0 + s*n over (n, T); returns (t0 ns, r_max MB/s, n_half bytes) or None."""
    pts = sorted(points.items())
    if len(pts) < 2:
        return None
    n = len(pts)
    sx = sum(x for x, _ in pts)
    sy = sum(y for _, y in pts)
    sxx = sum(x * x for x, _ in pts)
    sxy = sum(x * y for x, y in pts)
    den = n * sxx - sx * sx
    if den == 0:
        return None
    s = (n * sxy - sx * sy) / den
    t0 = (sy - s * sx) / n
    if s <= 0:
        return None
    return t0, 1000.0 / s, max(t0, 0.0) / s  # bytes/ns * 1000 = MB/s


def gnuplot(script):
    subprocess.run(["gnuplot"], input=script.encode(), check=True)


def main():
    src, out = sys.argv[1], sys.argv[2]
    echo, sink, thr, step, errors = load(src)
    os.makedirs(out, exist_ok=True)
    md = ["# lrpc_bench curves\n",
          "Echo: the bytes go to the server and come back (round trip). Sink: they go one way "
          "(bandwidth = bytes / time per call). One repetition per point; client on CPU 0, "
          "server on CPU 1. Throughput: Null calls per second from 1 and 2 client threads "
          "sharing one binding, nothing pinned.\n"]

    with tempfile.TemporaryDirectory() as tmp:
        def dat(name, series):
            p = os.path.join(tmp, name)
            with open(p, "w") as f:
                for x, y in sorted(series.items()):
                    f.write(f"{max(x, 1)} {y}\n")
            return p

        if echo:
            sizes = sorted({s for d in echo.values() for s in d})
            md.append("## Round trip against message size, µs (Echo)\n")
            md.append("| path | " + " | ".join(f"{s} B" for s in sizes) + " |")
            md.append("|---|" + "---|" * len(sizes))
            for path, d in sorted(echo.items()):
                md.append(f"| {path} | " + " | ".join(f"{d[s] / 1000:.2f}" if s in d else "-" for s in sizes) + " |")
            md.append("")
            plots = ", ".join(f"'{dat('echo_' + p, {k: v / 1000 for k, v in d.items()})}' using 1:2 with linespoints title '{p}'"
                              for p, d in sorted(echo.items()))
            gnuplot(f"""set terminal pngcairo size 900,600 noenhanced
set output '{os.path.join(out, 'rtt_vs_size.png')}'
set title 'Round trip against message size (Echo; 0 B drawn at 1 B)'
set logscale x 2
set logscale y 10
set xlabel 'message bytes each way'
set ylabel 'round trip, µs'
set grid
set key top left
plot {plots}
""")

        if sink:
            sizes = sorted({s for d in sink.values() for s in d})
            md.append("## One-way bandwidth against message size, MB/s (Sink)\n")
            md.append("| path | " + " | ".join(f"{s} B" for s in sizes) + " | t0 µs | r_max MB/s | n1/2 bytes |")
            md.append("|---|" + "---|" * (len(sizes) + 3))
            bw = {}
            for path, d in sorted(sink.items()):
                bw[path] = {s: (s / t * 1000.0 if t > 0 else 0.0) for s, t in d.items() if s > 0}
                f = fit(d)
                fitted = f"{f[0] / 1000:.2f} | {f[1]:,.0f} | {f[2]:,.0f}" if f else "- | - | -"
                md.append(f"| {path} | " + " | ".join(f"{bw[path][s]:,.1f}" if s in bw[path] else "-" for s in sizes)
                          + f" | {fitted} |")
            md.append("")
            plots = ", ".join(f"'{dat('bw_' + p, d)}' using 1:2 with linespoints title '{p}'"
                              for p, d in sorted(bw.items()) if d)
            if plots:
                gnuplot(f"""set terminal pngcairo size 900,600 noenhanced
set output '{os.path.join(out, 'bandwidth_vs_size.png')}'
set title 'One-way bandwidth against message size (Sink)'
set logscale x 2
set xlabel 'message bytes'
set ylabel 'MB/s'
set grid
set key top left
plot {plots}
""")

        if step:
            md.append("## The single-cell step, ns (CellStep: 24-byte against 32-byte echoes, paired)\n")
            md.append("A 24-byte echo is one cell each way over the network (32-byte header, 8-byte fixed "
                      "frame, 24 bytes); 32 bytes is one cell too many. Each repetition alternates bursts "
                      "of the two on one session and takes medians over its rounds; cells: the median "
                      "over the repetitions [min-max]. floor_udp_busy sends the same sizes as raw "
                      "datagrams: what the 8 extra bytes cost by themselves.\n")
            md.append("| path | 24 B (cell) | 32 B (over) | step | step [min-max] |")
            md.append("|---|---|---|---|---|")
            for path, reps in sorted(step.items()):
                c = statistics.median(r[0] for r in reps)
                o = statistics.median(r[1] for r in reps)
                st = [r[2] for r in reps]
                md.append(f"| {path} | {c:,.0f} | {o:,.0f} | {statistics.median(st):+,.0f} ({statistics.median(st) / c * 100:+.1f}%) "
                          f"| [{min(st):+,.0f} to {max(st):+,.0f}] |")
            md.append("")

        if thr:
            md.append("## Throughput against client threads, calls/s (Null)\n")
            md.append("| path | 1 thread | 2 threads |")
            md.append("|---|---|---|")
            for path, d in sorted(thr.items()):
                md.append(f"| {path} | {d.get(1, 0):,.0f} | {d.get(2, 0):,.0f} |")
            md.append("")
            plots = ", ".join(f"'{dat('thr_' + p, d)}' using 1:2 with linespoints title '{p}'"
                              for p, d in sorted(thr.items()))
            gnuplot(f"""set terminal pngcairo size 700,500 noenhanced
set output '{os.path.join(out, 'throughput_vs_threads.png')}'
set title 'Null calls per second against client threads'
set xrange [0.5:2.5]
set xtics 1
set xlabel 'client threads'
set ylabel 'calls/s'
set yrange [0:*]
set grid
set key bottom right
plot {plots}
""")

    if errors:
        md.append("Failed: " + "; ".join(errors) + "\n")
    if not (echo or sink or thr or step):
        md.append("No curves in this run (the lrpc layers they need are not in this build).\n")
    with open(os.path.join(out, "curves.md"), "w") as f:
        f.write("\n".join(md))


if __name__ == "__main__":
    main()
