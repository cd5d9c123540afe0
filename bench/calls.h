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

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

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
// multi-threaded benchmark share its session (the first one to ask starts it).
class SessionCache {
 public:
  template <class S, class Make>
  Result<S*> get(const std::string& benchmark, Make&& make) {
    std::lock_guard<std::mutex> lock(mu_);
    if (benchmark != name_ || !session_) {
      session_.reset();  // stop the previous server before starting the next
      name_ = benchmark;
      Result<std::unique_ptr<S>> made = make();
      if (!made) {
        name_.clear();
        return made.status();
      }
      session_ = std::move(made.value());
    }
    return static_cast<S*>(session_.get());
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    session_.reset();
    name_.clear();
  }

 private:
  std::mutex mu_;
  std::string name_;
  std::unique_ptr<Session> session_;
};

// The timed loop: `call` over `client`, checking each reply, then the per-call CPU counters.
template <class C>
void runCall(benchmark::State& state, C& client, const ServerProcess* server, Call call) {
  Blob200 in{};
  for (int i = 0; i < 25; ++i) in.w[i] = 0x0101010101010101ull * static_cast<uint64_t>(i + 1);
  Blob200 out{};
  uint64_t clientCpu0 = processCpuNs();
  uint64_t serverCpu0 = server ? server->cpuNs() : 0;
  int32_t n = 0;
  bool ok = true;
  switch (call) {
    case Call::kNull:
      for (auto _ : state) {
        if (!client.null()) { ok = false; break; }
      }
      break;
    case Call::kAdd:
      for (auto _ : state) {
        int32_t sum = 0;
        ++n;
        if (!client.add(n, 7, &sum) || sum != n + 7) { ok = false; break; }
      }
      break;
    case Call::kBigIn:
      for (auto _ : state) {
        in.w[0] = static_cast<uint64_t>(++n);
        if (!client.bigIn(in)) { ok = false; break; }
      }
      break;
    case Call::kBigInOut:
      for (auto _ : state) {
        in.w[0] = static_cast<uint64_t>(++n);
        if (!client.bigInOut(in, &out) || out.w[0] != in.w[0] + 1 || out.w[24] != in.w[24]) {
          ok = false;
          break;
        }
        benchmark::DoNotOptimize(out);
      }
      break;
  }
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
