#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, checks the layout, then builds the
# out-of-tree project twice against that prefix only (CMake: find_package + lrpc_generate;
# pkg-config: capnp + the installed plugin + a compiler line), and runs its server and
# client over both paths.
# The project is built from the README's own snippets ("Using lrpc from your own project"),
# taken verbatim: the CMakeLists.txt block and the pkg-config block.
# Usage: install_test.sh <build dir> <project dir> <c++ compiler> <build type> [sanitizer flags]
set -euo pipefail
BUILD=$1
PROJECT=$2
README=$PROJECT/../../../README.md
CXX=$3
TYPE=${4:-RelWithDebInfo}
SAN=${5:-}
work=$(mktemp -d)
prefix=$work/prefix
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }

step "cmake --install into $prefix"
cmake --install "$BUILD" --prefix "$prefix" >"$work/install.log" || { cat "$work/install.log"; fail "install"; }
for f in include/lrpc/runtime/contract.h include/lrpc/runtime/stub_support.h include/lrpc/runtime/exporter.h include/lrpc/runtime/import.h \
         include/lrpc/runtime/base/log.h include/lrpc/runtime/introspect.h include/lrpc/transport/client.h \
         include/lrpc/transport/server.h lib/liblrpc_runtime.a lib/liblrpc_transport.a bin/capnpc-lrpc bin/lrpc \
         share/lrpc/idl/lrpc.capnp lib/cmake/lrpc/lrpcConfig.cmake lib/cmake/lrpc/lrpcConfigVersion.cmake \
         lib/cmake/lrpc/lrpcTargets.cmake lib/cmake/lrpc/lrpc_generate.cmake lib/pkgconfig/lrpc.pc; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done
grep -rq "$(cd "$BUILD" && pwd)" "$prefix/lib/cmake/lrpc" && fail "the installed package names the build tree"
grep -rq "$(cd "$PROJECT/../../.." && pwd)/runtime" "$prefix/lib/cmake/lrpc" && fail "the installed package names the source tree"

# The project sees the prefix and nothing of this tree: a copy outside it, and the prefix as
# the only place to find lrpc.
cp -r "$PROJECT" "$work/src"
# The block after the README's marker line "<!-- tests/install ... -->" number $1 (1 or 2).
readme_block() {
  awk -v want="$1" '/^<!-- tests\/install / {n++; grab = (n == want); next}
    grab && /^```/ {if (inside) exit; inside = 1; next}
    grab && inside {print}' "$README"; }
readme_block 1 >"$work/src/CMakeLists.txt"
[ -s "$work/src/CMakeLists.txt" ] || fail "no CMake block in $README"
grep -q CMAKE_CXX_STANDARD "$work/src/CMakeLists.txt" && fail "the README's project names a C++ standard"
cmp -s "$work/src/CMakeLists.txt" "$PROJECT/CMakeLists.txt" || fail "project/CMakeLists.txt differs from the README's block"
san_args=()
if [ -n "$SAN" ]; then
  san_args=(-DCMAKE_CXX_FLAGS="$SAN" -DCMAKE_EXE_LINKER_FLAGS="$SAN")
fi
step "configure and build the project with find_package(lrpc)"
cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$CXX" \
  -DCMAKE_BUILD_TYPE="$TYPE" "${san_args[@]}" >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "configure"; }
cmake --build "$work/build" -j 2 >"$work/build.log" 2>&1 || { cat "$work/build.log"; fail "build"; }
grep -q "$prefix/bin/capnpc-lrpc" "$work/build/build.ninja" || fail "the stubs were not made by the installed capnpc-lrpc"

step "the README's pkg-config lines, in a fresh copy of the project"
cp -r "$PROJECT" "$work/pc"
# Only the prefix and the compiler (with this build's sanitizer flags) are this run's own.
readme_block 2 | sed -e "s#/opt/lrpc#$prefix#g" -e "s#^c++ #$CXX $SAN #" >"$work/pc/build.sh"
grep -q 'pkg-config --cflags lrpc' "$work/pc/build.sh" || fail "no pkg-config block in $README"
(cd "$work/pc" && bash -euo pipefail build.sh) >"$work/pc.log" 2>&1 || { cat "$work/pc.log"; fail "the README's pkg-config lines"; }
cp "$work/pc/client_pc" "$work/client_pc"

step "run the server and the clients"
export LRPC_DIR=$work/names
"$work/build/greeter_server" greeter >"$work/server.out" 2>&1 &
server_pid=$!
for _ in $(seq 100); do
  grep -q '^ready' "$work/server.out" && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.out"; fail "server exited"; }
  sleep 0.1
done
port=$(awk '/^ready/ {print $2}' "$work/server.out")
[ -n "$port" ] || fail "server not ready"
for target in greeter "udp+clear://127.0.0.1:$port/greeter"; do
  out=$("$work/build/greeter_client" "$target") || fail "client ($target): $out"
  [ "$out" = $'hello, out-of-tree\n42' ] || fail "client ($target) printed: $out"
  echo "client $target: ok"
done
out=$("$work/client_pc" greeter) || fail "pkg-config client: $out"
[ "$out" = $'hello, out-of-tree\n42' ] || fail "pkg-config client printed: $out"
echo "pkg-config client: ok"
# The installed operator tool sees the project's server.
"$prefix/bin/lrpc" ls | grep -Eq '^greeter +greeter\.capnp:Greeter ' || fail "installed lrpc ls does not show greeter"
"$prefix/bin/lrpc" stat greeter | grep -Eq '^calls served: +4$' || fail "installed lrpc stat: expected 4 calls served (2 per same-host client)"
echo "PASS: installed package, CMake and pkg-config consumers, server and client over both paths"
