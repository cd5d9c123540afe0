#pragma once
// Tail/<path>: the latency distribution of single Null calls. Each repetition times
// kTailCalls calls one by one (after kTailWarmUp untimed ones) and reports the counters p50_ns,
// p99_ns, p999_ns and max_ns; the table gives their medians over the repetitions. Every sample
// includes one clock reading (steady_clock through the vDSO), so p50 sits slightly above the
// Null row of the same path. Shared-memory IPC meets its trouble in the tail (a preempted
// spinner, a wake-up that misses), which a mean hides.

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "bench/registry.h"

namespace lrpc::bench {

inline constexpr int kTailCalls = 100'000;
inline constexpr int kTailWarmUp = 5'000;

// Registers Tail/<path>, sharing the session of Null/<path> (the same running server).
template <class S, class Make>
void addTail(BenchContext& ctx, const std::string& path, Make make) {
  const std::string name = "Tail/" + path;
  const std::string key = std::string(callName(Call::kNull)) + "/" + path;
  benchmark::RegisterBenchmark(name.c_str(), [&ctx, key, make](benchmark::State& state) {
    using Clock = std::chrono::steady_clock;
    Result<S*> session = ctx.sessions.get<S>(key, make);
    if (!session) {
      state.SkipWithError(session.status().toString().c_str());
      return;
    }
    S& s = *session.value();
    CallInputs io;
    std::vector<int64_t> ns(kTailCalls);
    bool ok = callLoop(s, Call::kNull, io, kTailWarmUp);
    for (auto _ : state) {
      for (int i = 0; ok && i < kTailCalls; ++i) {
        const Clock::time_point t0 = Clock::now();
        ok = oneCall(s, Call::kNull, io);
        ns[static_cast<size_t>(i)] = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
      }
    }
    if (!ok) {
      state.SkipWithError("call failed or returned a wrong result");
      return;
    }
    std::sort(ns.begin(), ns.end());
    auto at = [&ns](double q) { return static_cast<double>(ns[static_cast<size_t>(q * static_cast<double>(ns.size() - 1))]); };
    state.counters["p50_ns"] = at(0.50);
    state.counters["p99_ns"] = at(0.99);
    state.counters["p999_ns"] = at(0.999);
    state.counters["max_ns"] = static_cast<double>(ns.back());
  })->UseRealTime()->Iterations(1);
}

}  // namespace lrpc::bench
