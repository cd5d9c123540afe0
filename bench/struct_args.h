#pragma once
// A struct argument and result against the same values as flat parameters, schema
// bench/struct_args.capnp: StructArgs/<path> calls structEcho (a Rec of two Text and a
// List(Int32), passed as const Rec&, returned by value), FlatArgs/<path> calls flatEcho with
// the same values as three parameters (views of the same bytes) and three results, and
// StructArgs/paired_<path>_flat alternates bursts of the two on one session (counters as in
// bench/paired.h: `ratio` struct / flat, `a_ns` struct, `b_ns` flat). StructView/<path> calls
// viewEcho ($Lrpc.views: Rec::View of the same bytes, read in place by the handler), and
// StructView/paired_<path>_flat alternates it with flatEcho. Over `lrpc` (same host,
// adaptive) and `net_veth` (busy-poll between the namespaces). Compiled only with the layers
// they need, like lrpc_paths.h.

#include "bench/registry.h"

namespace lrpc::bench {

void registerStructArgs(BenchContext& ctx);

int serveStructArgsLocal(int readyFd, int argc, char** argv);
int serveStructArgsNet(int readyFd, int argc, char** argv);

}  // namespace lrpc::bench
