#pragma once
// Registering the paths: the context every benchmark shares and addPath(), which registers
// <Call>/<path> for the four calls of one path.

#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "bench/calls.h"
#include "bench/harness.h"

namespace lrpc::bench {

// What the benchmarks share: the running session and, once a path needs them, the two
// network namespaces. Owned by main, so both are torn down on every way out of it.
class BenchContext {
 public:
  SessionCache sessions;

  Result<const NetnsPair*> netns() {
    if (!triedNetns_) {
      triedNetns_ = true;
      auto made = std::make_unique<NetnsPair>();
      if (Status s = made->create(); s) {
        netns_ = std::move(made);
      } else {
        netnsError_ = s;
      }
    }
    if (!netns_) return netnsError_;
    return static_cast<const NetnsPair*>(netns_.get());
  }

  ~BenchContext() { sessions.clear(); }  // servers first, then the namespaces they live in

 private:
  bool triedNetns_ = false;
  Status netnsError_;
  std::unique_ptr<NetnsPair> netns_;
};

// Registers <Call>/<path> for the four calls. `make` starts the path's session:
// Result<std::unique_ptr<S>>().
template <class S, class Make>
void addPath(BenchContext& ctx, const std::string& path, Make make) {
  for (Call call : kCalls) {
    std::string name = std::string(callName(call)) + "/" + path;
    benchmark::RegisterBenchmark(name.c_str(), [&ctx, name, call, make](benchmark::State& state) {
      Result<S*> session = ctx.sessions.get<S>(name, make);
      if (!session) {
        state.SkipWithError(session.status().toString().c_str());
        return;
      }
      runCall(state, *session.value(), session.value()->server(), call);
    })->UseRealTime();
  }
}

// Registers Throughput/<path>/threads:1 and threads:2: Null calls from one and from two client
// threads sharing the path's client, items_per_second being calls per second. Unlike the
// table, nothing is pinned: the client threads and the server float over both CPUs (the
// paper's Figure 2, throughput against processors). `make` should start the server with
// kAnyCpu.
template <class S, class Make>
void addThroughput(BenchContext& ctx, const std::string& path, Make make) {
  std::string name = "Throughput/" + path;
  benchmark::RegisterBenchmark(name.c_str(), [&ctx, name, make](benchmark::State& state) {
    (void)pinToCpu(kAnyCpu);
    // Thread 0 runs on main's thread, which starts the server: the kernel kills a server
    // forked by one of Google Benchmark's own threads when that thread exits at the end of a
    // run (PR_SET_PDEATHSIG follows the forking thread, harness.cc), and the next run's
    // calls found it gone ("call failed" when threads:2 ran without threads:1 before it).
    Result<S*> session = state.thread_index() == 0 ? ctx.sessions.get<S>(name, make) : ctx.sessions.waitFor<S>(name);
    bool ok = session.isOk();
    if (ok) {
      S& s = *session.value();
      for (auto _ : state) {
        if (!s.null()) {
          ok = false;
          break;
        }
      }
    }
    if (!ok) state.SkipWithError(session ? "call failed" : session.status().toString().c_str());
    state.SetItemsProcessed(state.iterations());
    (void)pinToCpu(kClientCpu);  // the thread may be main's: give the table its pinning back
  })->Threads(1)->Threads(2)->UseRealTime();
}

}  // namespace lrpc::bench
