#!/usr/bin/env bash
# Runs lrpc_bench and writes into bench/results/
#   lrpc_bench.json  raw Google Benchmark JSON of the table's benchmarks
#   idle.json        raw JSON of the Idle/ benchmarks (servers after the last call, memory per binding)
#   table.md         the Table IV-style report (printed at the end)
#   curves.json, curves.md, *.png   the curves (message size, bandwidth, client threads)
#   bulk.md          bandwidth 4 KiB..64 MiB on both paths against memcpy/TCP/UDP GSO
# Usage: bench/run.sh BUILD_DIR [--quick] [--no-curves] [lrpc_bench flags for the table run]
#   --quick: one short repetition per benchmark (about a minute in all)
#   default: 9 repetitions of at least 0.2 s each, run in random order across all the table's
#            benchmarks (median [min-max] in the table), then the curves with one
#            repetition of 0.3 s per point
set -euo pipefail

build=${1:?usage: bench/run.sh BUILD_DIR [--quick] [lrpc_bench flags]}
shift
quick=0
curves=1
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --no-curves) curves=0 ;;
    *) break ;;
  esac
  shift
done
here=$(cd "$(dirname "$0")" && pwd)
bin=$build/bench/lrpc_bench
results=$here/results
mkdir -p "$results"
[ -x "$bin" ] || { echo "run.sh: $bin not built (configure with -DLRPC_BUILD_BENCH=ON)" >&2; exit 1; }

table_filter='--benchmark_filter=^(Null|Add|BigIn|BigInOut|StructArgs|FlatArgs|StructView|CapNull|RootNull|CapMake|Callback|FirstCall|Tail|Cost)/'
curves_filter='--benchmark_filter=^(Echo|Sink|Throughput|CellStep)/'
if [ $quick = 1 ]; then
  args=(--benchmark_min_time=0.2 --benchmark_repetitions=1)
  curve_args=(--benchmark_min_time=0.05 --benchmark_repetitions=1)
else
  # Interleaved: a virtual machine's speed can drift over minutes (steal time, the other
  # vCPU's load), and a ratio of two paths measured minutes apart
  # reports the drift. In random order, each path's median is taken over the same stretch.
  args=(--benchmark_min_time=0.2 --benchmark_min_warmup_time=0.05 --benchmark_repetitions=9
        --benchmark_enable_random_interleaving=true --benchmark_display_aggregates_only=true)
  curve_args=(--benchmark_min_time=0.3 --benchmark_min_warmup_time=0.05 --benchmark_repetitions=1)
fi

# lrpc_bench removes its network namespaces, sockets and name directories itself; this
# catches those of a run killed by a signal.
cleanup() {
  # Namespaces are named lrpcA<pid>_<n> and lrpcB<pid>_<n> (tests/testing/netns.cc).
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^lrpc[AB][0-9]+_' || true); do
    pid=${ns#lrpc?}
    pid=${pid%%_*}
    kill -0 "$pid" 2>/dev/null || ip netns del "$ns" 2>/dev/null || true
  done
  for f in /tmp/lrpc-bench-[0-9]*; do
    [ -e "$f" ] || continue
    pid=${f#/tmp/lrpc-bench-}
    pid=${pid%%-*}
    kill -0 "$pid" 2>/dev/null || rm -rf "$f"
  done
}
trap cleanup EXIT

tmp=$results/lrpc_bench.json.tmp
echo "run.sh: the table: $bin ${args[*]} $*" >&2
"$bin" "$table_filter" "${args[@]}" --benchmark_out="$tmp" --benchmark_out_format=json "$@"
mv "$tmp" "$results/lrpc_bench.json"
# What the servers cost once calls stop, and the memory of a binding (bench/idle.h): about
# 2.5 s per path and repetition, so fewer repetitions than the table.
# Left out with --no-curves, like everything after the table.
table_flags=()
[ $quick = 1 ] || table_flags=(--interleaved)
if [ $curves = 1 ]; then
  idle_reps=3
  [ $quick = 1 ] && idle_reps=1
  tmp=$results/idle.json.tmp
  echo "run.sh: idle servers: $bin --benchmark_repetitions=$idle_reps" >&2
  "$bin" '--benchmark_filter=^Idle/' --benchmark_repetitions=$idle_reps --benchmark_out="$tmp" --benchmark_out_format=json
  mv "$tmp" "$results/idle.json"
  table_flags+=(--idle "$results/idle.json")
fi
python3 "$here/make_table.py" "$results/lrpc_bench.json" "$results/table.md" "${table_flags[@]}"
# Other work on the machine makes every column noisy (spinning ones most): say how busy it was.
echo "Load average (1, 5, 15 min) at the end of the table run: $(cut -d' ' -f1-3 /proc/loadavg)." >> "$results/table.md"

if [ $curves = 1 ]; then
  tmp=$results/curves.json.tmp
  echo "run.sh: the curves: $bin ${curve_args[*]}" >&2
  "$bin" "$curves_filter" "${curve_args[@]}" --benchmark_out="$tmp" --benchmark_out_format=json
  mv "$tmp" "$results/curves.json"
  if command -v gnuplot >/dev/null; then
    python3 "$here/make_curves.py" "$results/curves.json" "$results"
  else
    echo "run.sh: gnuplot missing (cmake/install-deps.sh bench installs it): no plots" >&2
  fi
fi
# Bulk: 4 KiB to 64 MiB on both paths with their floors (memcpy, TCP, UDP GSO), a
# separate binary because one call there takes up to a second (bench/README.md, "Bulk").
bulk=$build/bench/lrpc_bulk_bench
if [ $curves = 1 ] && [ -x "$bulk" ]; then
  if [ $quick = 1 ]; then bulk_args=(--budget-ms 100 --max-mib 16); else bulk_args=(--budget-ms 300 --max-mib 64); fi
  echo "run.sh: bulk: $bulk ${bulk_args[*]}" >&2
  if "$bulk" "${bulk_args[@]}" > "$results/bulk.md.tmp"; then
    mv "$results/bulk.md.tmp" "$results/bulk.md"
  else
    echo "run.sh: lrpc_bulk_bench failed (see above); bulk.md not updated" >&2
    rm -f "$results/bulk.md.tmp"
  fi
fi
echo
cat "$results/table.md"
[ $curves = 1 ] && [ -f "$results/curves.md" ] && { echo; cat "$results/curves.md"; }
[ $curves = 1 ] && [ -f "$results/bulk.md" ] && { echo; cat "$results/bulk.md"; }
exit 0
