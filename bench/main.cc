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

#include "bench/breakdown.h"
#include "bench/calls.h"
#include "bench/caps.h"
#include "bench/curves.h"
#include "bench/floors.h"
#include "bench/harness.h"
#include "bench/lrpc_paths.h"
#include "bench/msg_uds.h"
#include "bench/peers.h"
#include "bench/registry.h"
#include "bench/struct_args.h"
#include "bench/tail.h"

namespace lrpc::bench {
namespace {

void registerAll(BenchContext& ctx) {
  registerLrpcPaths(ctx);  // direct, lrpc*, net_*: those this build has
  addPath<ShmFloor>(ctx, "floor_spin", [] { return ShmFloor::start(WaitMode::kSpin); });
  addTail<ShmFloor>(ctx, "floor_spin", [] { return ShmFloor::start(WaitMode::kSpin); });
  addPath<ShmFloor>(ctx, "floor_futex", [] { return ShmFloor::start(WaitMode::kBlock); });
  addPath<ShmFloor>(ctx, "floor_futex_samecore", [] { return ShmFloor::start(WaitMode::kBlock, kClientCpu); });
  addPath<MsgUds>(ctx, "msg_uds", [] { return MsgUds::start(kServerCpu); });
  addPath<MsgUds>(ctx, "msg_uds_samecore", [] { return MsgUds::start(kClientCpu); });
  addPath<CapnpRpc>(ctx, "capnp_rpc", [] { return CapnpRpc::start(kServerCpu); });
  addPath<GrpcUds>(ctx, "grpc_uds", [] { return GrpcUds::start(kServerCpu); });
  addPath<UdpFloor>(ctx, "floor_udp", [&ctx]() -> Result<std::unique_ptr<UdpFloor>> {
    Result<const NetnsPair*> net = ctx.netns();
    if (!net) return net.status();
    return UdpFloor::start(WaitMode::kBlock, *net.value());
  });
  auto udpBusy = [&ctx]() -> Result<std::unique_ptr<UdpFloor>> {
    Result<const NetnsPair*> net = ctx.netns();
    if (!net) return net.status();
    return UdpFloor::start(WaitMode::kSpin, *net.value());
  };
  addPath<UdpFloor>(ctx, "floor_udp_busy", udpBusy);
  addTail<UdpFloor>(ctx, "floor_udp_busy", udpBusy);
  registerCurves(ctx);  // Echo/*, Sink/*: the curves, as far as this build has lrpc
  registerBreakdown(ctx);   // Cost/*: the pieces of a same-host call, one thread
  registerStructArgs(ctx);  // StructArgs/*, FlatArgs/*: a struct against flat parameters
  registerCaps(ctx);        // CapNull/*, RootNull/*, CapMake/*, Callback/*: calls on capabilities
}

// The server side of every path, in the exec'd child.
int serverMain(const std::string& kind, int readyFd, int argc, char** argv) {
  if (kind == "floor_shm") return serveShmFloor(readyFd, argc, argv);
  if (kind == "floor_udp") return serveUdpFloor(readyFd, argc, argv);
  if (kind == "msg_uds") return serveMsgUds(readyFd, argc, argv);
  if (kind == "capnp_rpc") return serveCapnpRpc(readyFd, argc, argv);
  if (kind == "grpc_uds") return serveGrpcUds(readyFd, argc, argv);
  if (kind == "lrpc_local") return serveLrpcLocal(readyFd, argc, argv);
  if (kind == "lrpc_net") return serveLrpcNet(readyFd, argc, argv);
  if (kind == "curves_local") return serveCurvesLocal(readyFd, argc, argv);
  if (kind == "curves_net") return serveCurvesNet(readyFd, argc, argv);
  if (kind == "structargs_local") return serveStructArgsLocal(readyFd, argc, argv);
  if (kind == "structargs_net") return serveStructArgsNet(readyFd, argc, argv);
  if (kind == "caps_local") return serveCapsLocal(readyFd, argc, argv);
  if (kind == "caps_net") return serveCapsNet(readyFd, argc, argv);
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
