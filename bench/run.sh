#!/usr/bin/env bash
# Runs lrpc_bench and writes bench/results/lrpc_bench.json (raw Google Benchmark JSON) and
# bench/results/table.md (the Table IV-style report), then prints the table.
# Usage: bench/run.sh BUILD_DIR [--quick] [extra lrpc_bench flags, e.g. --benchmark_filter=...]
#   --quick: one short repetition per benchmark (about a minute in all)
#   default: 3 repetitions of at least 1 s each (median [min-max] in the table)
set -euo pipefail

build=${1:?usage: bench/run.sh BUILD_DIR [--quick] [lrpc_bench flags]}
shift
quick=0
if [ "${1:-}" = --quick ]; then
  quick=1
  shift
fi
here=$(cd "$(dirname "$0")" && pwd)
bin=$build/bench/lrpc_bench
results=$here/results
mkdir -p "$results"
[ -x "$bin" ] || { echo "run.sh: $bin not built (configure with -DLRPC_BUILD_BENCH=ON)" >&2; exit 1; }

if [ $quick = 1 ]; then
  args=(--benchmark_min_time=0.2 --benchmark_repetitions=1)
else
  args=(--benchmark_min_time=1 --benchmark_min_warmup_time=0.1 --benchmark_repetitions=3
        --benchmark_display_aggregates_only=true)
fi

# Network namespaces are removed by lrpc_bench itself; this catches one killed by a signal.
cleanup() {
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep '^lrpcbench-' || true); do
    pid=${ns#lrpcbench-}
    pid=${pid%%-*}
    kill -0 "$pid" 2>/dev/null || ip netns del "$ns" 2>/dev/null || true
  done
}
trap cleanup EXIT

tmp=$results/lrpc_bench.json.tmp
echo "run.sh: $bin ${args[*]} $*" >&2
"$bin" "${args[@]}" --benchmark_out="$tmp" --benchmark_out_format=json "$@"
mv "$tmp" "$results/lrpc_bench.json"
python3 "$here/make_table.py" "$results/lrpc_bench.json" "$results/table.md"
echo
cat "$results/table.md"
