#!/bin/bash
# What a translation unit with only `#include "foo.lrpc.h"` reaches: the generated-code contract
# must not drag locks, clocks, threads or sockets into user code (they belong to the runtime's
# slow paths, out of line), and the number of lrpc headers it reaches may only go down.
# Usage: contract_header_test.sh <c++ compiler> <source root> <max lrpc headers> <gen dir>:<header>...
set -euo pipefail
cxx=$1 root=$2 max=$3
shift 3
forbidden='/(mutex|chrono|thread|condition_variable|functional|shared_mutex|future)$|/sys/socket\.h$|/netinet/'
status=0
tu=$(mktemp --suffix=.cc)
trap 'rm -f "$tu"' EXIT
for spec in "$@"; do
  dir=${spec%%:*} header=${spec#*:}
  echo "#include \"$header\"" > "$tu"
  # -H lists every header opened, one per line, dots for depth.
  reached=$("$cxx" -std=c++20 -H -fsyntax-only -I "$dir" -I "$root" "$tu" 2>&1 >/dev/null | grep -E '^\.+ ' | awk '{print $2}')
  ours=$(grep -E "^$root/(runtime|transport)/|^\./(runtime|transport)/|^(runtime|transport)/" <<< "$reached" | sort -u || true)
  count=$(grep -c . <<< "$ours" || true)
  bad=$(grep -E "$forbidden" <<< "$reached" | sort -u || true)
  echo "$header: $count lrpc headers (at most $max):"
  sed 's/^/  /' <<< "$ours"
  if [[ -n $bad ]]; then
    echo "FAIL: $header reaches headers generated code must not need:"
    sed 's/^/  /' <<< "$bad"
    status=1
  fi
  if (( count > max )); then
    echo "FAIL: $header reaches $count lrpc headers, more than $max"
    status=1
  fi
  if (( count == 0 )); then
    echo "FAIL: $header reached no lrpc header: the compiler's -H output was not understood"
    status=1
  fi
done
exit $status
