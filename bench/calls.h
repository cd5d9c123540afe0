#pragma once
// The paper's four calls (Table IV) as every path in bench/ implements them, and the timed
// loop that drives one call over one path.
//
// A path is a "client" class with four non-virtual methods, so that the loop is a template
// instantiated per path and adds no indirection of its own:
//   bool null();
//   bool add(int32_t a, int32_t b, int32_t* sum);
//   bool bigIn(const Blob200& in);
//   bool bigInOut(const Blob200& in, Blob200* out);
// Each returns false when the call failed. Every server implements the same semantics:
// add returns a + b; bigIn copies the 200 bytes into the server's own memory; bigInOut
// copies them in and returns a copy whose first word is incremented, so the loop can check
// each round trip really went there and back.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench/harness.h"

namespace lrpc::bench {

enum class Call { kNull, kAdd, kBigIn, kBigInOut };
constexpr std::array<Call, 4> kCalls = {Call::kNull, Call::kAdd, Call::kBigIn, Call::kBigInOut};

constexpr const char* callName(Call c) {
  switch (c) {
    case Call::kNull: return "Null";
    case Call::kAdd: return "Add";
    case Call::kBigIn: return "BigIn";
    case Call::kBigInOut: return "BigInOut";
  }
  return "?";
}

// The 200-byte argument, as plain memory (each path converts to its own representation).
struct Blob200 {
  uint64_t w[25];
};
static_assert(sizeof(Blob200) == 200);

// What BigInOut's server returns for `in`.
inline void bigInOutReply(const Blob200& in, Blob200* out) {
  *out = in;
  out->w[0] = in.w[0] + 1;
}

// One running path: its server process (if any) and the client's connection to it.
class Session {
 public:
  virtual ~Session() = default;
  // The server process whose CPU time is reported, or null (in-process paths).
  virtual const ServerProcess* server() const { return nullptr; }
};

// Keeps the session of the benchmark that is running, so that Google Benchmark's repeated
// invocations of one benchmark (iteration estimates, repetitions) reuse one server; a new
// benchmark tears the previous session down first. Owned by main. The threads of a
// multi-threaded benchmark share its session: thread 0, which runs on main's thread, starts
// it with get() and the others waitFor() it.
class SessionCache {
 public:
  template <class S, class Make>
  Result<S*> get(const std::string& benchmark, Make&& make) {
    std::lock_guard<std::mutex> lock(mu_);
    if (benchmark != name_ || !session_) {
      session_.reset();  // stop the previous server before starting the next
      name_ = benchmark;
      failed_.clear();
      Result<std::unique_ptr<S>> made = make();
      if (!made) {
        name_.clear();
        failed_ = benchmark;
        return made.status();
      }
      session_ = std::move(made.value());
    }
    return static_cast<S*>(session_.get());
  }
  // The session another thread of the same benchmark starts with get(), once it has.
  template <class S>
  Result<S*> waitFor(const std::string& benchmark) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (benchmark == name_ && session_) return static_cast<S*>(session_.get());
        if (benchmark == failed_) return Status(Errc::kIoError, "the benchmark's first thread could not start its session");
      }
      if (std::chrono::steady_clock::now() > until) return Status(Errc::kDeadlineExceeded, "no session started");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    session_.reset();
    name_.clear();
  }

 private:
  std::mutex mu_;
  std::string name_;
  std::string failed_;  // the benchmark whose session get() could not start
  std::unique_ptr<Session> session_;
};

// The median of per-round measurements (0 for none).
inline double medianOf(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// One timed burst: `once()` untimed until `warmUp` has passed (at least once), then `calls`
// times timed. ns per call, or -1 as soon as `once()` returns false. For the paired cells,
// which alternate bursts of two things and compare them round by round.
template <class F>
double timedBurst(F&& once, std::chrono::nanoseconds warmUp, int calls) {
  using Clock = std::chrono::steady_clock;
  auto until = Clock::now() + warmUp;
  do {
    if (!once()) return -1;
  } while (Clock::now() < until);
  auto t0 = Clock::now();
  for (int i = 0; i < calls; ++i) {
    if (!once()) return -1;
  }
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / calls;
}

// The arguments the loops send, and what the last BigInOut returned.
struct CallInputs {
  Blob200 in{};
  Blob200 out{};
  int32_t n = 0;
  CallInputs() {
    for (int i = 0; i < 25; ++i) in.w[i] = 0x0101010101010101ull * static_cast<uint64_t>(i + 1);
  }
};

// One call of each kind, checking the reply.
template <class C>
inline bool addOnce(C& client, CallInputs& io) {
  int32_t sum = 0;
  ++io.n;
  return client.add(io.n, 7, &sum) && sum == io.n + 7;
}
template <class C>
inline bool bigInOnce(C& client, CallInputs& io) {
  io.in.w[0] = static_cast<uint64_t>(++io.n);
  return client.bigIn(io.in);
}
template <class C>
inline bool bigInOutOnce(C& client, CallInputs& io) {
  io.in.w[0] = static_cast<uint64_t>(++io.n);
  if (!client.bigInOut(io.in, &io.out) || io.out.w[0] != io.in.w[0] + 1 || io.out.w[24] != io.in.w[24]) return false;
  benchmark::DoNotOptimize(io.out);
  return true;
}

// Returns `loop(once)` with `once` the call's body, so that each loop is compiled per call
// kind (the switch stays outside it); `once()` is false when the call failed or came back
// wrong. `loop` returns what the caller wants (ok or not, a time).
template <class C, class Loop>
inline auto withCall(C& client, Call call, CallInputs& io, Loop&& loop) -> decltype(loop(std::declval<bool (*)()>())) {
  switch (call) {
    case Call::kNull: return loop([&] { return client.null(); });
    case Call::kAdd: return loop([&] { return addOnce(client, io); });
    case Call::kBigIn: return loop([&] { return bigInOnce(client, io); });
    case Call::kBigInOut: return loop([&] { return bigInOutOnce(client, io); });
  }
  return {};
}

template <class C>
bool oneCall(C& client, Call call, CallInputs& io) {
  return withCall(client, call, io, [](auto once) { return once(); });
}

template <class C>
bool callLoop(C& client, Call call, CallInputs& io, int count) {
  return withCall(client, call, io, [count](auto once) {
    for (int i = 0; i < count; ++i) {
      if (!once()) return false;
    }
    return true;
  });
}

// The timed loop: `call` over `client`, checking each reply, then the per-call CPU counters.
template <class C>
void runCall(benchmark::State& state, C& client, const ServerProcess* server, Call call) {
  CallInputs io;
  uint64_t clientCpu0 = processCpuNs();
  uint64_t serverCpu0 = server ? server->cpuNs() : 0;
  bool ok = withCall(client, call, io, [&state](auto once) {
    for (auto _ : state) {
      if (!once()) return false;
    }
    return true;
  });
  uint64_t clientCpu = processCpuNs() - clientCpu0;
  uint64_t serverCpu = server ? server->cpuNs() - serverCpu0 : 0;
  if (!ok) {
    state.SkipWithError("call failed or returned a wrong result");
    return;
  }
  state.counters["client_cpu_ns"] =
      benchmark::Counter(static_cast<double>(clientCpu), benchmark::Counter::kAvgIterations);
  if (server) {
    state.counters["server_cpu_ns"] =
        benchmark::Counter(static_cast<double>(serverCpu), benchmark::Counter::kAvgIterations);
  }
}

}  // namespace lrpc::bench
