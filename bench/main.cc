// lrpc_bench: the paper's Table IV over every path, one Google Benchmark binary.
//
// Benchmarks are named <Call>/<path>; bench/README.md says what each path measures and
// bench/run.sh turns the JSON into the table. Run as "lrpc_bench --server KIND READY_FD ..."
// the binary is instead one of the server processes the benchmarks start (see harness.h).

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "bench/calls.h"
#include "bench/floors.h"
#include "bench/harness.h"
#include "bench/msg_uds.h"
#include "bench/peers.h"

namespace lrpc::bench {
namespace {

// What the benchmarks share: the running session and, once a path needs them, the two
// network namespaces. Owned by main, so both are torn down on every way out of it.
class BenchContext {
 public:
  SessionCache sessions;

  Result<const NetnsPair*> netns() {
    if (!triedNetns_) {
      triedNetns_ = true;
      Result<std::unique_ptr<NetnsPair>> made = NetnsPair::create();
      if (made) {
        netns_ = std::move(made.value());
      } else {
        netnsError_ = made.status();
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

void registerAll(BenchContext& ctx) {
  addPath<ShmFloor>(ctx, "floor_spin", [] { return ShmFloor::start(WaitMode::kSpin); });
  addPath<ShmFloor>(ctx, "floor_futex", [] { return ShmFloor::start(WaitMode::kBlock); });
  addPath<MsgUds>(ctx, "msg_uds", [] { return MsgUds::start(kServerCpu); });
  addPath<CapnpRpc>(ctx, "capnp_rpc", [] { return CapnpRpc::start(kServerCpu); });
  addPath<GrpcUds>(ctx, "grpc_uds", [] { return GrpcUds::start(kServerCpu); });
  addPath<UdpFloor>(ctx, "floor_udp", [&ctx]() -> Result<std::unique_ptr<UdpFloor>> {
    Result<const NetnsPair*> net = ctx.netns();
    if (!net) return net.status();
    return UdpFloor::start(WaitMode::kBlock, *net.value());
  });
  addPath<UdpFloor>(ctx, "floor_udp_busy", [&ctx]() -> Result<std::unique_ptr<UdpFloor>> {
    Result<const NetnsPair*> net = ctx.netns();
    if (!net) return net.status();
    return UdpFloor::start(WaitMode::kSpin, *net.value());
  });
}

// The server side of every path, in the exec'd child.
int serverMain(const std::string& kind, int readyFd, int argc, char** argv) {
  if (kind == "floor_shm") return serveShmFloor(readyFd, argc, argv);
  if (kind == "floor_udp") return serveUdpFloor(readyFd, argc, argv);
  if (kind == "msg_uds") return serveMsgUds(readyFd, argc, argv);
  if (kind == "capnp_rpc") return serveCapnpRpc(readyFd, argc, argv);
  if (kind == "grpc_uds") return serveGrpcUds(readyFd, argc, argv);
  std::fprintf(stderr, "lrpc_bench: unknown server kind '%s'\n", kind.c_str());
  return 2;
}

}  // namespace
}  // namespace lrpc::bench

int main(int argc, char** argv) {
  using namespace lrpc::bench;
  if (argc >= 4 && std::strcmp(argv[1], "--server") == 0) {
    return serverMain(argv[2], std::atoi(argv[3]), argc - 4, argv + 4);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (lrpc::Status s = pinToCpu(kClientCpu); !s) {
    std::fprintf(stderr, "lrpc_bench: %s (continuing unpinned)\n", s.toString().c_str());
  }
  BenchContext ctx;
  registerAll(ctx);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
