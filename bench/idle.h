#pragma once
// Idle/<path>: what a path costs once its calls stop, and what one binding holds. The target:
// an idle server uses under 1% of a core one second after the last call; and the memory of a
// binding (all its A-stacks) is reported, so that what a client costs a server is known.
//
// Each repetition starts a fresh server (pinned to CPU 1 like the table's), makes
// kIdleCallsEach calls of each of the four kinds, so that every server thread the binding can
// have exists and has just worked, then sleeps and reads the CPU clocks:
//   server_first_pct  the server process's CPU in the first second after the last call, in %
//                     of one core (what spinning before sleeping costs)
//   server_idle_pct   the same over the second after that: the figure the target is about
//   client_idle_pct   the benchmark process's CPU over that second (its main thread sleeps,
//                     so this is whatever threads the client library keeps running)
// and, where the path reports them (same host), `server_threads` (the server's threads for
// A-stacks after the calls) and `binding_bytes` / `astacks` (the binding's A-stack region).

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "bench/calls.h"
#include "bench/registry.h"

namespace lrpc::bench {

inline constexpr int kIdleCallsEach = 2000;

// What a same-host session reports of its binding (-1: unknown).
struct BindingMemory {
  int64_t serverThreads = -1;  // the server's threads for A-stacks
  int64_t regionBytes = -1;    // the binding's A-stack region (one memfd)
  int64_t astacks = -1;
};

template <class S, class Make>
void addIdle(BenchContext& ctx, const std::string& path, Make make) {
  std::string name = "Idle/" + path;
  benchmark::RegisterBenchmark(name.c_str(), [&ctx, make](benchmark::State& state) {
    using Clock = std::chrono::steady_clock;
    ctx.sessions.clear();  // a server of its own, and no other path's server left running
    auto made = make();
    if (!made) {
      state.SkipWithError(made.status().toString().c_str());
      return;
    }
    S& s = *made.value();
    const ServerProcess* server = s.server();
    CallInputs io;
    for (Call call : kCalls) {
      if (!callLoop(s, call, io, kIdleCallsEach)) {
        state.SkipWithError("call failed or returned a wrong result");
        return;
      }
    }
    BindingMemory memory;
    if constexpr (requires(S& x) { x.bindingMemory(); }) memory = s.bindingMemory();
    auto cpu = [server] { return server ? server->cpuNs() : 0; };
    auto pct = [](uint64_t ns, Clock::duration d) {
      return 100.0 * static_cast<double>(ns) / static_cast<double>(std::chrono::nanoseconds(d).count());
    };
    double first = 0, idle = 0, clientIdle = 0;
    for (auto _ : state) {
      Clock::time_point t0 = Clock::now();
      uint64_t s0 = cpu();
      std::this_thread::sleep_until(t0 + std::chrono::seconds(1));
      Clock::time_point t1 = Clock::now();
      uint64_t s1 = cpu();
      uint64_t c1 = processCpuNs();
      std::this_thread::sleep_until(t1 + std::chrono::seconds(1));
      Clock::time_point t2 = Clock::now();
      uint64_t s2 = cpu();
      uint64_t c2 = processCpuNs();
      first = pct(s1 - s0, t1 - t0);
      idle = pct(s2 - s1, t2 - t1);
      clientIdle = pct(c2 - c1, t2 - t1);
      state.SetIterationTime(std::chrono::duration<double>(t2 - t0).count());
    }
    if (server) {
      state.counters["server_first_pct"] = first;
      state.counters["server_idle_pct"] = idle;
    }
    state.counters["client_idle_pct"] = clientIdle;
    state.counters["calls_each"] = kIdleCallsEach;
    if (memory.serverThreads >= 0) state.counters["server_threads"] = static_cast<double>(memory.serverThreads);
    if (memory.regionBytes >= 0) {
      state.counters["binding_bytes"] = static_cast<double>(memory.regionBytes);
      state.counters["astacks"] = static_cast<double>(memory.astacks);
    }
  })->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
}

}  // namespace lrpc::bench
