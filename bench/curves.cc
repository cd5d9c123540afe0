#include "bench/curves.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bench/floors.h"
#include "bench/lrpc_common.h"
#include "bench/lrpc_sessions.h"

#if LRPC_BENCH_LOCAL || LRPC_BENCH_NET
#include "curves.lrpc.h"  // lrpc_generate(lrpc_bench .../curves.capnp)
#endif

namespace lrpc::bench {

namespace {

// The message sizes of the curves, bytes. 24 is the largest echo whose request and reply
// are single-cell datagrams over the network (32-byte header + 8-byte fixed frame + 24),
// 32 the smallest that is not: the pair shows the single-cell step, if there is one.
constexpr int64_t kSizes[] = {0, 24, 32, 64, 256, 1024, 4096, 16384, 65536};

enum class Kind { kEcho, kSink };

// Registers Echo/<path>/<bytes> and Sink/<path>/<bytes>; all sizes share one server.
template <class S, class Make>
void addCurve(BenchContext& ctx, const std::string& path, Make make) {
  for (Kind kind : {Kind::kEcho, Kind::kSink}) {
    std::string name = std::string(kind == Kind::kEcho ? "Echo/" : "Sink/") + path;
    std::string key = "curves/" + path;
    auto* b = benchmark::RegisterBenchmark(name.c_str(), [&ctx, key, kind, make](benchmark::State& state) {
      Result<S*> session = ctx.sessions.get<S>(key, make);
      if (!session) {
        state.SkipWithError(session.status().toString().c_str());
        return;
      }
      S& client = *session.value();
      const ServerProcess* server = client.server();
      size_t size = static_cast<size_t>(state.range(0));
      std::vector<uint8_t> data(size, 0x5a);
      std::vector<uint8_t> back;
      uint64_t clientCpu0 = processCpuNs();
      uint64_t serverCpu0 = server->cpuNs();
      bool ok = true;
      uint8_t n = 0;
      for (auto _ : state) {
        if (size > 0) data[0] = ++n;
        if (kind == Kind::kEcho) {
          ok = client.echo(data, &back) && back.size() == size && (size == 0 || back[0] == n);
        } else {
          ok = client.sink(data);
        }
        if (!ok) break;
      }
      uint64_t clientCpu = processCpuNs() - clientCpu0;
      uint64_t serverCpu = server->cpuNs() - serverCpu0;
      if (!ok) {
        state.SkipWithError("call failed or returned wrong bytes");
        return;
      }
      int64_t moved = static_cast<int64_t>(size) * (kind == Kind::kEcho ? 2 : 1);
      state.SetBytesProcessed(state.iterations() * moved);
      state.counters["client_cpu_ns"] =
          benchmark::Counter(static_cast<double>(clientCpu), benchmark::Counter::kAvgIterations);
      state.counters["server_cpu_ns"] =
          benchmark::Counter(static_cast<double>(serverCpu), benchmark::Counter::kAvgIterations);
    });
    for (int64_t size : kSizes) b->Arg(size);
    b->UseRealTime();
  }
}

// One echo of `data` (its first byte counts the calls), reply checked.
template <class S>
bool echoOnce(S& client, std::vector<uint8_t>& data, std::vector<uint8_t>& back) {
  if (!data.empty()) ++data[0];
  return client.echo(data, &back) && back.size() == data.size() && (data.empty() || back[0] == data[0]);
}

// Registers CellStep/<path>: the single-cell step measured directly. Rounds alternate a burst
// of 24-byte echoes (single-cell both ways) with one of 32-byte echoes (one cell too many) on
// the curve's own session, so both sizes see the host of the same millisecond; the Echo curve
// takes each size seconds apart and the step (a few hundred ns in 12 us) drowns in the drift.
// Counters, medians over the rounds: cell_ns and over_ns per call, step_ns (their difference).
template <class S, class Make>
void addCellStep(BenchContext& ctx, const std::string& path, Make make) {
  std::string name = "CellStep/" + path;
  std::string key = "curves/" + path;
  benchmark::RegisterBenchmark(name.c_str(), [&ctx, key, make](benchmark::State& state) {
    Result<S*> session = ctx.sessions.get<S>(key, make);
    if (!session) {
      state.SkipWithError(session.status().toString().c_str());
      return;
    }
    S& client = *session.value();
    constexpr int kBurst = 64;
    std::vector<uint8_t> cell(static_cast<size_t>(kSizes[1]), 0x5a), over(static_cast<size_t>(kSizes[2]), 0x5a), back;
    std::vector<double> cellNs, overNs, stepNs;
    bool cellFirst = true;
    auto burst = [&](std::vector<uint8_t>& data) -> double {
      // The warm-up takes in the other size's buffers and branches (a few calls).
      return timedBurst([&] { return echoOnce(client, data, back); }, std::chrono::microseconds(30), kBurst);
    };
    for (auto _ : state) {
      double a = cellFirst ? burst(cell) : burst(over);
      double b = a < 0 ? -1 : (cellFirst ? burst(over) : burst(cell));
      if (a < 0 || b < 0) {
        state.SkipWithError("call failed or returned wrong bytes");
        return;
      }
      double c = cellFirst ? a : b, o = cellFirst ? b : a;
      cellFirst = !cellFirst;
      cellNs.push_back(c);
      overNs.push_back(o);
      stepNs.push_back(o - c);
      state.SetIterationTime((c + o) * kBurst * 1e-9);
    }
    state.counters["cell_ns"] = medianOf(cellNs);
    state.counters["over_ns"] = medianOf(overNs);
    state.counters["step_ns"] = medianOf(stepNs);
  })
      ->UseManualTime()
      ->MinTime(0.2)
      ->Repetitions(5);  // the curves' run has one repetition per point; a step of 2% needs more
}

// The floors of the curves, in every build.
void registerCurveFloors(BenchContext& ctx) {
  addCurve<ShmFloor>(ctx, "floor_spin", [] { return ShmFloor::start(WaitMode::kSpin); });
  auto udpBusy = [&ctx]() -> Result<std::unique_ptr<UdpFloor>> {
    Result<const NetnsPair*> netns = ctx.netns();
    if (!netns) return netns.status();
    return UdpFloor::start(WaitMode::kSpin, *netns.value());
  };
  addCurve<UdpFloor>(ctx, "floor_udp_busy", udpBusy);
  addCellStep<UdpFloor>(ctx, "floor_udp_busy", udpBusy);  // raw UDP: what 8 more bytes cost alone
}

}  // namespace

#if LRPC_BENCH_LOCAL || LRPC_BENCH_NET
namespace {

using curves::Curves;

class CurvesImpl final : public Curves::Server {
 public:
  Result<std::vector<uint8_t>> echo(std::span<const uint8_t> data) override {
    return std::vector<uint8_t>(data.begin(), data.end());
  }
  Status sink(std::span<const uint8_t> data) override {
    benchmark::DoNotOptimize(data.data());
    return {};
  }
  Status sinkInPlace(std::span<const uint8_t> data) override { return sink(data); }
  Result<std::vector<uint8_t>> source(uint32_t bytes) override { return std::vector<uint8_t>(bytes, 0x5a); }
};

class CurvesSession : public ClientSession<Curves> {
 public:
  static constexpr const char* kName = "curves";
  static constexpr const char* kLocalKind = "curves_local";
  static constexpr const char* kNetKind = "curves_net";

  bool echo(std::span<const uint8_t> in, std::vector<uint8_t>* out) {
    Result<std::vector<uint8_t>> r = client_.echo(in);
    if (!r) return false;
    *out = std::move(*r);
    return true;
  }
  bool sink(std::span<const uint8_t> in) { return client_.sink(in).isOk(); }
};

#if LRPC_BENCH_LOCAL
using CurvesLocal = LocalSession<CurvesSession>;
#endif
#if LRPC_BENCH_NET
using CurvesNet = NetSession<CurvesSession>;
#endif

}  // namespace

void registerCurves(BenchContext& ctx) {
  registerCurveFloors(ctx);
#if LRPC_BENCH_LOCAL
  addCurve<CurvesLocal>(ctx, "lrpc", [] { return CurvesLocal::start(TransferMode::kAdaptive); });
  addCurve<CurvesLocal>(ctx, "lrpc_spin", [] { return CurvesLocal::start(TransferMode::kSpin); });
#endif
#if LRPC_BENCH_NET
  addCurve<CurvesNet>(ctx, "net_loopback", [] { return CurvesNet::start(net::ReceiveMode::kAdaptive, nullptr); });
  auto veth = [&ctx]() -> Result<std::unique_ptr<CurvesNet>> {
    Result<const NetnsPair*> netns = ctx.netns();
    if (!netns) return netns.status();
    return CurvesNet::start(net::ReceiveMode::kBusyPoll, netns.value());
  };
  addCurve<CurvesNet>(ctx, "net_veth", veth);
  addCellStep<CurvesNet>(ctx, "net_veth", veth);
#endif
  (void)ctx;
}

int serveCurvesLocal(int readyFd, int argc, char** argv) {
  return serveLocal<Curves>(readyFd, argc, argv, [] { return std::make_unique<CurvesImpl>(); });
}

int serveCurvesNet(int readyFd, int argc, char** argv) {
  return serveNet<Curves>(readyFd, argc, argv, [] { return std::make_unique<CurvesImpl>(); });
}

#else  // neither layer in this build

void registerCurves(BenchContext& ctx) { registerCurveFloors(ctx); }
int serveCurvesLocal(int, int, char**) { return 2; }
int serveCurvesNet(int, int, char**) { return 2; }

#endif

}  // namespace lrpc::bench
