#pragma once
// Null/<path>_async (and the raw floor Null/floor_udp_pipelined): one client thread keeps
// `inFlight` Null calls in flight; each iteration completes the oldest, and calls restart in
// its place (on the network in bursts, pipelineNull), so real time per iteration is the time
// per call once the pipeline is full. The
// same host keeps every A-stack of the procedure in flight, the network a full call window.
// Per-call CPU of the client process and of the server process are reported as for the table's
// other cells, to show where the time goes.

#include <benchmark/benchmark.h>

#include <cstddef>
#include <string>
#include <vector>

#include "bench/calls.h"
#include "runtime/send_batch.h"
#include "bench/registry.h"

namespace lrpc::bench {

// Calls in flight on the network paths: the client's default window.
inline constexpr size_t kNetInFlight = 32;

// Network calls restart in bursts of this many under an lrpc::SendBatch: their requests leave
// in one system call, as the floor's sendmmsg does (at least inFlight - kNetRefill in flight).
inline constexpr size_t kNetRefill = 8;

// The pipelined loop over `start()`, which starts one Null call and returns its lrpc::Pending.
// Each iteration completes the oldest call; every `refill` completions, that many calls start
// in their places under one SendBatch (1: each restarts at once).
template <class Start>
bool pipelineNull(benchmark::State& state, size_t inFlight, size_t refill, Start start) {
  using P = decltype(start());
  std::vector<P> ring;
  ring.reserve(inFlight);
  {
    SendBatch batch;
    for (size_t i = 0; i < inFlight; ++i) ring.push_back(start());
  }
  size_t at = 0;
  size_t due = 0;  // completed calls before `at` not restarted yet
  bool ok = true;
  for (auto _ : state) {
    if (!ring[at].wait().isOk()) {
      ok = false;
      break;
    }
    at = at + 1 == inFlight ? 0 : at + 1;
    if (++due == refill) {
      SendBatch batch;
      for (size_t k = 0; k < due; ++k) ring[(at + inFlight - due + k) % inFlight] = start();
      due = 0;
    }
  }
  for (P& p : ring) {
    if (p.valid() && !p.wait().isOk()) ok = false;
  }
  return ok;
}

// Registers Null/<path>_async (Null/<path> for a path named *_pipelined, a floor) over a
// session of S, whose nullPipelined(state, inFlight) runs the loop.
template <class S, class Make>
void addAsync(BenchContext& ctx, const std::string& path, size_t inFlight, Make make) {
  const bool floor = path.size() > 10 && path.compare(path.size() - 10, 10, "_pipelined") == 0;
  const std::string name = std::string(callName(Call::kNull)) + "/" + path + (floor ? "" : "_async");
  benchmark::RegisterBenchmark(name.c_str(), [&ctx, name, make, inFlight](benchmark::State& state) {
    Result<S*> session = ctx.sessions.get<S>(name, make);
    if (!session) {
      state.SkipWithError(session.status().toString().c_str());
      return;
    }
    const ServerProcess* server = session.value()->server();
    const uint64_t clientCpu0 = processCpuNs();
    const uint64_t serverCpu0 = server ? server->cpuNs() : 0;
    if (!session.value()->nullPipelined(state, inFlight)) {
      state.SkipWithError("a pipelined call failed");
      return;
    }
    const uint64_t clientCpu = processCpuNs() - clientCpu0;
    const uint64_t serverCpu = server ? server->cpuNs() - serverCpu0 : 0;
    state.counters["in_flight"] = static_cast<double>(inFlight);
    state.counters["client_cpu_ns"] =
        benchmark::Counter(static_cast<double>(clientCpu), benchmark::Counter::kAvgIterations);
    if (server) {
      state.counters["server_cpu_ns"] =
          benchmark::Counter(static_cast<double>(serverCpu), benchmark::Counter::kAvgIterations);
    }
  })->UseRealTime();
}

}  // namespace lrpc::bench
