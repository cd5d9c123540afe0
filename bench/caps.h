#pragma once
// Calls on capabilities, schema bench/caps.capnp: CapNull/<path> calls null() on an object the
// server returned (its calls go through the binding's tunnel procedure), RootNull/<path> the
// same empty call on the imported binding itself, CapNull/paired_<path>_root alternates bursts
// of the two on one session (counters as in bench/paired.h: `ratio` cap / root), and
// CapMake/<path> makes a call that returns a new object and drops it (the drop is one more
// call, the release). Callback/<path> passes an object the client serves and the server calls
// it once before it returns (with Callback/paired_<path>_root against RootNull). Over `lrpc`
// (same host, adaptive) and `net_veth` (busy-poll between the namespaces; the callback goes
// over the session the server opens back to the client). Compiled only with the layers they need, like lrpc_paths.h.

#include "bench/registry.h"

namespace lrpc::bench {

void registerCaps(BenchContext& ctx);

int serveCapsLocal(int readyFd, int argc, char** argv);
int serveCapsNet(int readyFd, int argc, char** argv);

}  // namespace lrpc::bench
