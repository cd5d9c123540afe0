#include "bench/lrpc_paths.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>

#include "bench/floors.h"
#include "bench/idle.h"
#include "bench/lrpc_common.h"
#include "bench/lrpc_sessions.h"
#include "bench/paired.h"
#include "bench/tail.h"
#include "bench/async.h"

#if LRPC_BENCH_DIRECT
#include "paper.lrpc.h"  // lrpc_generate(lrpc_bench .../paper.capnp)
#endif
#if LRPC_BENCH_LOCAL
#include "runtime/introspect.h"
#include "runtime/local_binding.h"
#endif

namespace lrpc::bench {

#if LRPC_BENCH_DIRECT
namespace {

using paper::Paper;
using paper::Bytes200;
static_assert(sizeof(Bytes200) == sizeof(Blob200) && std::is_trivially_copyable_v<Bytes200>);

inline Bytes200 toBytes(const Blob200& in) {
  Bytes200 b;
  std::memcpy(&b, &in, sizeof b);
  return b;
}

// The four calls through any Paper::Client (same host or network): the client side of a
// session, whatever binding it holds.
class PaperClientSession : public ClientSession<Paper> {
 public:
  bool null() { return client_.null().isOk(); }
  bool add(int32_t a, int32_t b, int32_t* sum) {
    Result<int32_t> r = client_.add(a, b);
    if (!r) return false;
    *sum = *r;
    return true;
  }
  bool bigIn(const Blob200& in) { return client_.bigIn(toBytes(in)).isOk(); }
  bool bigInOut(const Blob200& in, Blob200* out) {
    Result<Bytes200> r = client_.bigInOut(toBytes(in));
    if (!r) return false;
    std::memcpy(out, &*r, sizeof *out);
    return true;
  }
  // Null/<path>_async: one thread keeps `inFlight` Null calls in flight; each iteration
  // completes the oldest, and calls restart in bursts of refillBurst() (async.h).
  bool nullPipelined(benchmark::State& state, size_t inFlight) {
    return pipelineNull(state, inFlight, refillBurst(), [a = client_.async()] { return a.null(); });
  }
  // Same host: each call restarts at once (a start is a store to shared memory).
  virtual size_t refillBurst() const { return 1; }
};

}  // namespace

// The handler every lrpc column calls (defined in paper_impl.cc, out of sight of the
// callers here, so that `direct` really makes a virtual call).
std::unique_ptr<Paper::Server> makePaperImpl();

namespace {

class Direct final : public Session {
 public:
  static Result<std::unique_ptr<Direct>> start() { return std::unique_ptr<Direct>(new Direct(makePaperImpl())); }
  bool null() { return impl_->null().isOk(); }
  bool add(int32_t a, int32_t b, int32_t* sum) {
    Result<int32_t> r = impl_->add(a, b);
    if (!r) return false;
    *sum = *r;
    return true;
  }
  bool bigIn(const Blob200& in) { return impl_->bigIn(toBytes(in)).isOk(); }
  bool bigInOut(const Blob200& in, Blob200* out) {
    Result<Bytes200> r = impl_->bigInOut(toBytes(in));
    if (!r) return false;
    std::memcpy(out, &*r, sizeof *out);
    return true;
  }

 private:
  explicit Direct(std::unique_ptr<Paper::Server> impl) : impl_(std::move(impl)) {}
  std::unique_ptr<Paper::Server> impl_;
};

// The whole generated client and server code of a call in one thread, with no handoff: the
// stub's remote branch, a message buffer, the in-process channel and the generated dispatch
// (bench/breakdown.h).
class InProcess final : public PaperClientSession {
 public:
  static Result<std::unique_ptr<InProcess>> start() {
    std::unique_ptr<InProcess> s(new InProcess());
    s->client_ = Paper::Client::serve(std::shared_ptr<Paper::Server>(makePaperImpl()));
    return s;
  }

 private:
  InProcess() = default;
};

#if LRPC_BENCH_LOCAL
class LrpcLocal final : private OwnsNamesDir, public PaperClientSession {
 public:
  static Result<std::unique_ptr<LrpcLocal>> start(TransferMode mode, int serverCpu) {
    std::unique_ptr<LrpcLocal> s(new LrpcLocal());
    ServerSpec spec;
    spec.kind = "lrpc_local";
    spec.cpu = serverCpu;
    if (Status st = startLocal<Paper>(spec, "paper", s->dir_, mode, s->server_, s->client_); !st) return st;
    return s;
  }
  // For Idle/<path>: the binding's A-stack region, and the server's threads as it reports them.
  BindingMemory bindingMemory() const {
    BindingMemory m;
    if (const LocalBinding* lb = client_.binding()->local) {
      m.regionBytes = static_cast<int64_t>(lb->layout().regionBytes());
      m.astacks = lb->layout().astackCount();
    }
    QueryOptions query;
    query.dir = dir_;
    if (Result<ServerInfo> info = queryServer("paper", query)) m.serverThreads = static_cast<int64_t>(info->stats.serverThreads);
    return m;
  }

 private:
  LrpcLocal() = default;
};
#endif  // LRPC_BENCH_LOCAL

#if LRPC_BENCH_NET
class LrpcNet final : public PaperClientSession {
 public:
  // Requests of a burst leave in one system call (lrpc::SendBatch).
  size_t refillBurst() const override { return kNetRefill; }
  // netns null: loopback in the current namespace; else client and server namespaces.
  // secure: authenticated and encrypted sessions (the server's fresh key pinned in the
  // address); else the clear-text opt-in.
  static Result<std::unique_ptr<LrpcNet>> start(net::ReceiveMode mode, const NetnsPair* netns, bool secure = false) {
    std::unique_ptr<LrpcNet> s(new LrpcNet());
    ServerSpec spec;
    spec.kind = "lrpc_net";
    if (Status st = startNet<Paper>(spec, "paper", mode, netns, s->server_, s->client_, secure, &s->uri_); !st) return st;
    s->mode_ = mode;
    s->netns_ = netns;
    return s;
  }
  // A new channel to the same server, from the client namespace: connect (the handshakes)
  // and one Null call. For FirstCall/<path>.
  bool connectAndCallOnce() {
    std::optional<NetnsScope> scope;
    if (netns_) {
      Result<NetnsScope> entered = NetnsScope::enter(netns_->nsPath(false));
      if (!entered) return false;
      scope.emplace(std::move(*entered));
    }
    net::ClientOptions options;
    options.mode = mode_;
    Result<Paper::Client> c = net::connect<Paper>(uri_, options);
    return c.isOk() && c->null().isOk();
  }


 private:
  LrpcNet() = default;
  std::string uri_;
  net::ReceiveMode mode_ = net::ReceiveMode::kAdaptive;
  const NetnsPair* netns_ = nullptr;
};

// FirstCall/<path>: a new client's time to its first result on a running server: opening the
// endpoint, the handshakes (on a secure path the Noise one, then the session's), one Null
// call; closing the client is not timed.
template <class Make>
void addFirstCall(BenchContext& ctx, const std::string& path, Make make) {
  std::string name = "FirstCall/" + path;
  benchmark::RegisterBenchmark(name.c_str(), [&ctx, name, make](benchmark::State& state) {
    Result<LrpcNet*> session = ctx.sessions.get<LrpcNet>(name, make);
    if (!session) {
      state.SkipWithError(session.status().toString().c_str());
      return;
    }
    for (auto _ : state) {
      if (!session.value()->connectAndCallOnce()) {
        state.SkipWithError("connect or first call failed");
        break;
      }
    }
  })->UseRealTime()->Iterations(200);
}
#endif  // LRPC_BENCH_NET

}  // namespace

void registerLrpcPaths(BenchContext& ctx) {
  addPath<Direct>(ctx, "direct", [] { return Direct::start(); });
  addPath<InProcess>(ctx, "inproc", [] { return InProcess::start(); });
#if LRPC_BENCH_LOCAL
  addPath<LrpcLocal>(ctx, "lrpc", [] { return LrpcLocal::start(TransferMode::kAdaptive, kServerCpu); });
  addPath<LrpcLocal>(ctx, "lrpc_spin", [] { return LrpcLocal::start(TransferMode::kSpin, kServerCpu); });
  addPath<LrpcLocal>(ctx, "lrpc_block", [] { return LrpcLocal::start(TransferMode::kBlock, kServerCpu); });
  addPath<LrpcLocal>(ctx, "lrpc_block_samecore", [] { return LrpcLocal::start(TransferMode::kBlock, kClientCpu); });
  addIdle<LrpcLocal>(ctx, "lrpc", [] { return LrpcLocal::start(TransferMode::kAdaptive, kServerCpu); });
  addIdle<LrpcLocal>(ctx, "lrpc_spin", [] { return LrpcLocal::start(TransferMode::kSpin, kServerCpu); });
  addIdle<LrpcLocal>(ctx, "lrpc_block", [] { return LrpcLocal::start(TransferMode::kBlock, kServerCpu); });
  addThroughput<LrpcLocal>(ctx, "lrpc", [] { return LrpcLocal::start(TransferMode::kAdaptive, kAnyCpu); });
  addThroughput<LrpcLocal>(ctx, "lrpc_spin", [] { return LrpcLocal::start(TransferMode::kSpin, kAnyCpu); });
  addThroughput<LrpcLocal>(ctx, "lrpc_block", [] { return LrpcLocal::start(TransferMode::kBlock, kAnyCpu); });
  addTail<LrpcLocal>(ctx, "lrpc", [] { return LrpcLocal::start(TransferMode::kAdaptive, kServerCpu); });
  addTail<LrpcLocal>(ctx, "lrpc_spin", [] { return LrpcLocal::start(TransferMode::kSpin, kServerCpu); });
  // Every A-stack of Null in flight from one thread.
  const size_t nullAStacks = Paper::kProcedures[Paper::kNull].astackCount;
  addAsync<LrpcLocal>(ctx, "lrpc_spin", nullAStacks, [] { return LrpcLocal::start(TransferMode::kSpin, kServerCpu); });
  addAsync<LrpcLocal>(ctx, "lrpc", nullAStacks, [] { return LrpcLocal::start(TransferMode::kAdaptive, kServerCpu); });
  addPair<LrpcLocal, ShmFloor>(
      ctx, "lrpc", "floor_spin", [] { return LrpcLocal::start(TransferMode::kAdaptive, kServerCpu); },
      [] { return ShmFloor::start(WaitMode::kSpin); });
  addPair<LrpcLocal, ShmFloor>(
      ctx, "lrpc_spin", "floor_spin", [] { return LrpcLocal::start(TransferMode::kSpin, kServerCpu); },
      [] { return ShmFloor::start(WaitMode::kSpin); }, Parking::kStopped);
  addPair<LrpcLocal, ShmFloor>(
      ctx, "lrpc_block", "floor_futex", [] { return LrpcLocal::start(TransferMode::kBlock, kServerCpu); },
      [] { return ShmFloor::start(WaitMode::kBlock); });
#endif
#if LRPC_BENCH_NET
  addPath<LrpcNet>(ctx, "net_loopback", [] { return LrpcNet::start(net::ReceiveMode::kAdaptive, nullptr); });
  // Starters of the paths between the two namespaces (made on first use).
  auto netOnVeth = [&ctx](net::ReceiveMode mode) {
    return [&ctx, mode]() -> Result<std::unique_ptr<LrpcNet>> {
      Result<const NetnsPair*> netns = ctx.netns();
      if (!netns) return netns.status();
      return LrpcNet::start(mode, netns.value());
    };
  };
  auto udpFloorOnVeth = [&ctx](WaitMode mode) {
    return [&ctx, mode]() -> Result<std::unique_ptr<UdpFloor>> {
      Result<const NetnsPair*> netns = ctx.netns();
      if (!netns) return netns.status();
      return UdpFloor::start(mode, *netns.value());
    };
  };
  // The secure default (authenticated, encrypted) next to the clear-text opt-in.
  auto secureOnVeth = [&ctx](net::ReceiveMode mode) {
    return [&ctx, mode]() -> Result<std::unique_ptr<LrpcNet>> {
      Result<const NetnsPair*> netns = ctx.netns();
      if (!netns) return netns.status();
      return LrpcNet::start(mode, netns.value(), true);
    };
  };
  addPath<LrpcNet>(ctx, "net_veth", netOnVeth(net::ReceiveMode::kBusyPoll));
  addPath<LrpcNet>(ctx, "net_veth_secure", secureOnVeth(net::ReceiveMode::kBusyPoll));
  addTail<LrpcNet>(ctx, "net_veth", netOnVeth(net::ReceiveMode::kBusyPoll));
  addTail<LrpcNet>(ctx, "net_veth_secure", secureOnVeth(net::ReceiveMode::kBusyPoll));
  addPair<LrpcNet, LrpcNet>(ctx, "net_veth_secure", "net_veth", secureOnVeth(net::ReceiveMode::kBusyPoll),
                            netOnVeth(net::ReceiveMode::kBusyPoll), Parking::kStopped);
  addAsync<LrpcNet>(ctx, "net_veth", kNetInFlight, netOnVeth(net::ReceiveMode::kBusyPoll));
  addAsync<UdpFloor>(ctx, "floor_udp_pipelined", kNetInFlight, [&ctx]() -> Result<std::unique_ptr<UdpFloor>> {
    Result<const NetnsPair*> netns = ctx.netns();
    if (!netns) return netns.status();
    return UdpFloor::startPipelined(*netns.value());
  });
  addFirstCall(ctx, "net_veth", netOnVeth(net::ReceiveMode::kBusyPoll));
  addFirstCall(ctx, "net_veth_secure", secureOnVeth(net::ReceiveMode::kBusyPoll));
  addPath<LrpcNet>(ctx, "net_veth_block", netOnVeth(net::ReceiveMode::kBlocking));
  addIdle<LrpcNet>(ctx, "net_loopback", [] { return LrpcNet::start(net::ReceiveMode::kAdaptive, nullptr); });
  addIdle<LrpcNet>(ctx, "net_veth", netOnVeth(net::ReceiveMode::kBusyPoll));
  addIdle<LrpcNet>(ctx, "net_veth_block", netOnVeth(net::ReceiveMode::kBlocking));
  addPair<LrpcNet, UdpFloor>(ctx, "net_veth_block", "floor_udp", netOnVeth(net::ReceiveMode::kBlocking),
                             udpFloorOnVeth(WaitMode::kBlock));
  addPair<LrpcNet, UdpFloor>(ctx, "net_veth", "floor_udp_busy", netOnVeth(net::ReceiveMode::kBusyPoll),
                             udpFloorOnVeth(WaitMode::kSpin), Parking::kStopped);
#endif
}

int serveLrpcLocal(int readyFd, int argc, char** argv) {
  return serveLocal<Paper>(readyFd, argc, argv, makePaperImpl);
}

int serveLrpcNet(int readyFd, int argc, char** argv) {
  return serveNet<Paper>(readyFd, argc, argv, makePaperImpl);
}

#else  // !LRPC_BENCH_DIRECT: no generated stubs in this build yet

void registerLrpcPaths(BenchContext&) {}
int serveLrpcLocal(int, int, char**) { return 2; }
int serveLrpcNet(int, int, char**) { return 2; }

#endif

}  // namespace lrpc::bench
