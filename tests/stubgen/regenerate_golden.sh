#!/bin/bash
# Rewrites the expected generator output in testdata/ on purpose, after a deliberate change
# to what capnpc-lrpc emits (like capnp's regenerate-bootstraps.sh). Review the diff.
#   tests/stubgen/regenerate_golden.sh [path/to/capnpc-lrpc]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
plugin="${1:-$repo/build-stubgen/stubgen/capnpc-lrpc}"
plugin="$(cd "$(dirname "$plugin")" && pwd)/$(basename "$plugin")"
[[ -x "$plugin" ]] || { echo "no capnpc-lrpc at $plugin (build it, or pass its path)" >&2; exit 1; }
cd "$here/testdata"
for schema in *.capnp; do
  capnp compile -I"$repo/idl" -o"$plugin:$here/testdata" "$schema"
done
git -C "$repo" status --short -- "$here/testdata"
