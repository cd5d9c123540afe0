#pragma once
// The curves: round trip against message size (Echo/<path>/<bytes>: the bytes go there and
// come back) and one-way bandwidth (Sink/<path>/<bytes>) from 0 B to 64 KiB, over lrpc on
// the same host and the network transport, with the schema bench/curves.capnp. make_curves.py
// plots them and fits r_max and n1/2 to the Sink times. Compiled only with the layers they
// need (LRPC_BENCH_LOCAL, LRPC_BENCH_NET), like lrpc_paths.h.

#include "bench/registry.h"

namespace lrpc::bench {

void registerCurves(BenchContext& ctx);

int serveCurvesLocal(int readyFd, int argc, char** argv);
int serveCurvesNet(int readyFd, int argc, char** argv);

}  // namespace lrpc::bench
