#pragma once
// The lrpc columns: `direct` (needs the generated stubs), `lrpc*` (the same-host runtime) and
// `net_*` (the UDP transport). Each is compiled only when its layer exists in the build
// (CMake defines LRPC_BENCH_DIRECT, LRPC_BENCH_LOCAL, LRPC_BENCH_NET), so the benchmark builds
// and its other columns run while a layer is still being written.

#include "bench/registry.h"

namespace lrpc::bench {

// Registers the lrpc columns this build has.
void registerLrpcPaths(BenchContext& ctx);

// Server entry points; return 2 when the build lacks the layer.
int serveLrpcLocal(int readyFd, int argc, char** argv);
int serveLrpcNet(int readyFd, int argc, char** argv);

}  // namespace lrpc::bench
