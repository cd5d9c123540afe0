#pragma once
// Paired cells: two paths measured in alternating bursts within one repetition, so that both
// see the same host. On a virtual machine the cost of a cache-line handoff can change several
// times over from one minute to the next (as the hypervisor places the two vCPUs and runs
// other guests), and a ratio of two cells taken seconds apart can report that instead of the
// software.
//
// <Call>/paired_<a>_<b> runs rounds of one burst on each path (the order alternates), each
// burst timed after a warm-up long enough for the other path's server to have gone to sleep
// (both servers are pinned to CPU 1 and sleep when idle). Its counters are the medians over
// the rounds: `ratio` (a's time per call / b's, per round), `diff_ns` (a's minus b's, per
// round: what a costs over b in ns), `a_ns` and `b_ns`.
//
// Servers that busy-poll by design never sleep, and two of them on CPU 1 would take turns by
// time slice in the middle of each other's bursts. For those (Parking::kStopped) the idle
// path's server process is stopped (SIGSTOP) for the other's burst and continued (SIGCONT)
// before its own: it then finds CPU 1 to itself, as a sleeping server would leave it.

#include <benchmark/benchmark.h>

#include <signal.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "bench/calls.h"
#include "bench/registry.h"

namespace lrpc::bench {

// How the idle path of a pair leaves CPU 1 to the other.
enum class Parking : uint8_t {
  kSleeps,   // its server sleeps by itself when idle
  kStopped,  // its server busy-polls: the benchmark stops it (see above)
};

template <class A, class B>
class PairSession final : public Session {
 public:
  PairSession(std::unique_ptr<A> a, std::unique_ptr<B> b) : a_(std::move(a)), b_(std::move(b)) {}
  ~PairSession() override {
    // A stopped server would not act on the SIGTERM that ends it.
    resume(*a_);
    resume(*b_);
    b_.reset();
    a_.reset();
  }
  A& a() { return *a_; }
  B& b() { return *b_; }

  // Parking::kStopped: gives CPU 1 to `run`'s server, taking it from `idle`'s.
  template <class Run, class Idle>
  static void handOver(Run& run, Idle& idle) {
    if (const ServerProcess* p = idle.server()) ::kill(p->pid(), SIGSTOP);
    resume(run);
  }
  template <class S>
  static void resume(S& s) {
    if (const ServerProcess* p = s.server()) ::kill(p->pid(), SIGCONT);
  }

 private:
  std::unique_ptr<A> a_;
  std::unique_ptr<B> b_;
};

namespace paired {

// Untimed calls at the start of a burst: the first wakes this path's sleeping server, and
// the other path's server needs its spin budget (kAdaptiveSpins pauses, far less than this) to
// go to sleep (or a stopped server's SIGSTOP to land).
constexpr auto kWarmUp = std::chrono::microseconds(300);
constexpr int kBurstCalls = 256;

// One burst on `client` (timedBurst, the loop compiled per call kind): ns per call, or a
// negative value when a call failed or returned a wrong result.
template <class C>
double burst(C& client, Call call, CallInputs& io) {
  return withCall(client, call, io, [](auto once) { return timedBurst(once, kWarmUp, kBurstCalls); });
}

// The rounds of one repetition of a paired cell: `runA()` and `runB()` each run one burst and
// return its ns per call (negative when a call failed or returned a wrong result), in
// alternating order. Reports the medians over the rounds as the counters `ratio` (a / b per
// round), `diff_ns` (a - b per round), `a_ns` and `b_ns`, or the benchmark's error when a call
// failed.
template <class RunA, class RunB>
void rounds(benchmark::State& state, RunA&& runA, RunB&& runB) {
  std::vector<double> ratios, diffs, aNs, bNs;
  bool aFirst = true;
  for (auto _ : state) {
    double ta = 0, tb = 0;
    if (aFirst) {
      ta = runA();
      tb = ta < 0 ? -1 : runB();
    } else {
      tb = runB();
      ta = tb < 0 ? -1 : runA();
    }
    if (ta < 0 || tb < 0) {
      state.SkipWithError("call failed or returned a wrong result");
      return;
    }
    aFirst = !aFirst;
    ratios.push_back(ta / tb);
    diffs.push_back(ta - tb);
    aNs.push_back(ta);
    bNs.push_back(tb);
    state.SetIterationTime((ta + tb) * kBurstCalls * 1e-9);
  }
  state.counters["ratio"] = medianOf(ratios);
  state.counters["diff_ns"] = medianOf(diffs);
  state.counters["a_ns"] = medianOf(aNs);
  state.counters["b_ns"] = medianOf(bNs);
}

}  // namespace paired

// Registers <Call>/paired_<a>_<b> for the four calls; makeA and makeB start the two paths'
// sessions: Result<std::unique_ptr<A>>() and Result<std::unique_ptr<B>>().
template <class A, class B, class MakeA, class MakeB>
void addPair(BenchContext& ctx, const std::string& a, const std::string& b, MakeA makeA, MakeB makeB,
             Parking parking = Parking::kSleeps) {
  using Pair = PairSession<A, B>;
  for (Call call : kCalls) {
    std::string name = std::string(callName(call)) + "/paired_" + a + "_" + b;
    benchmark::RegisterBenchmark(name.c_str(), [&ctx, name, call, makeA, makeB, parking](benchmark::State& state) {
      Result<Pair*> session = ctx.sessions.get<Pair>(name, [&]() -> Result<std::unique_ptr<Pair>> {
        auto sa = makeA();
        if (!sa) return sa.status();
        auto sb = makeB();
        if (!sb) return sb.status();
        return std::make_unique<Pair>(std::move(sa.value()), std::move(sb.value()));
      });
      if (!session) {
        state.SkipWithError(session.status().toString().c_str());
        return;
      }
      Pair& pair = *session.value();
      CallInputs io;
      bool stop = parking == Parking::kStopped;
      // Between repetitions and benchmarks (and after a failed call) both servers run as usual.
      struct ResumeBoth {
        Pair& pair;
        bool on;
        ~ResumeBoth() {
          if (!on) return;
          Pair::resume(pair.a());
          Pair::resume(pair.b());
        }
      } resumeBoth{pair, stop};
      auto runA = [&] {
        if (stop) Pair::handOver(pair.a(), pair.b());
        return paired::burst(pair.a(), call, io);
      };
      auto runB = [&] {
        if (stop) Pair::handOver(pair.b(), pair.a());
        return paired::burst(pair.b(), call, io);
      };
      paired::rounds(state, runA, runB);
    })->UseManualTime();
  }
}

}  // namespace lrpc::bench
