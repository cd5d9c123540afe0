#include "bench/caps.h"

#include <memory>
#include <string>

#include "bench/lrpc_common.h"
#include "bench/paired.h"

#if LRPC_BENCH_LOCAL || LRPC_BENCH_NET
#include "caps.lrpc.h"  // lrpc_generate(lrpc_bench .../caps.capnp)
#endif

namespace lrpc::bench {

#if LRPC_BENCH_LOCAL || LRPC_BENCH_NET
namespace {

using capsb::Obj;
using capsb::Root;

class ObjImpl final : public Obj::Server {
 public:
  Status null() override { return {}; }
};

class RootImpl final : public Root::Server {
 public:
  Status null() override { return {}; }
  Result<Obj::Client> obj() override { return obj_; }
  Result<Obj::Client> make() override { return Obj::Client::serve(std::make_shared<ObjImpl>()); }
  Status callback(const Obj::Client& obj) override { return obj.null(); }

 private:
  Obj::Client obj_ = Obj::Client::serve(std::make_shared<ObjImpl>());
};

enum class Kind { kCapNull, kRootNull, kCapMake, kCallback };

constexpr const char* kindName(Kind k) {
  return k == Kind::kCapNull ? "CapNull" : k == Kind::kRootNull ? "RootNull" : k == Kind::kCapMake ? "CapMake" : "Callback";
}

class CapsSession : public Session {
 public:
  // Binds the object CapNull calls (once per session, outside any timed loop).
  Status fetchObj() {
    Result<Obj::Client> o = root_.obj();
    if (!o) return o.status();
    obj_ = o.value().withOptions(withDeadline());
    return {};
  }
  bool capNull() { return obj_.null().isOk(); }
  bool rootNull() { return root_.null().isOk(); }
  bool capMake() {
    Result<Obj::Client> o = root_.make();
    return o.isOk();  // dropped here: the release is part of the cost
  }
  // The server calls our object back; it releases it when the call ends (part of the cost).
  bool callback() { return root_.callback(mine_).isOk(); }
  const ServerProcess* server() const override { return server_.get(); }

 protected:
  ~CapsSession() override {
    obj_ = Obj::Client();
    mine_ = Obj::Client();
    root_ = Root::Client();  // unbind before the server goes away
    server_.reset();
  }
  std::unique_ptr<ServerProcess> server_;
  Root::Client root_;
  Obj::Client obj_;
  Obj::Client mine_ = Obj::Client::serve(std::make_shared<ObjImpl>());
};

template <class S, class Loop>
auto withKind(S& client, Kind kind, Loop&& loop) {
  if (kind == Kind::kCapNull) return loop([&] { return client.capNull(); });
  if (kind == Kind::kRootNull) return loop([&] { return client.rootNull(); });
  if (kind == Kind::kCallback) return loop([&] { return client.callback(); });
  return loop([&] { return client.capMake(); });
}

// `callbacks`: register the Callback rows (every path carries objects the client serves).
template <class S, class Make>
void addKinds(BenchContext& ctx, const std::string& path, bool callbacks, Make make) {
  std::string key = "caps/" + path;
  auto session = [&ctx, key, make, callbacks](benchmark::State& state) -> S* {
    Result<S*> s = ctx.sessions.get<S>(key, [make, callbacks]() -> Result<std::unique_ptr<S>> {
      Result<std::unique_ptr<S>> made = make();
      if (!made) return made.status();
      if (Status st = made.value()->fetchObj(); !st) return st;
      // The first callback sets up the callback binding: outside the timed loops.
      if (callbacks && !made.value()->callback()) return Status(Errc::kServerFault, "the first callback failed");
      return made;
    });
    if (!s) {
      state.SkipWithError(s.status().toString().c_str());
      return nullptr;
    }
    return s.value();
  };
  for (Kind kind : {Kind::kCapNull, Kind::kRootNull, Kind::kCapMake, Kind::kCallback}) {
    if (kind == Kind::kCallback && !callbacks) continue;
    std::string name = std::string(kindName(kind)) + "/" + path;
    benchmark::RegisterBenchmark(name.c_str(), [session, kind](benchmark::State& state) {
      S* client = session(state);
      if (client == nullptr) return;
      bool ok = withKind(*client, kind, [&state](auto once) {
        for (auto _ : state) {
          if (!once()) return false;
        }
        return true;
      });
      if (!ok) state.SkipWithError("call failed");
    })->UseRealTime();
  }
  // `kind` against RootNull in alternating bursts on one session (bench/paired.h).
  auto pairWithRoot = [session, &path](Kind kind) {
    std::string name = std::string(kindName(kind)) + "/paired_" + path + "_root";
    benchmark::RegisterBenchmark(name.c_str(), [session, kind](benchmark::State& state) {
      S* client = session(state);
      if (client == nullptr) return;
      auto burst = [&](Kind k) {
        return withKind(*client, k, [](auto once) { return timedBurst(once, paired::kWarmUp, paired::kBurstCalls); });
      };
      paired::rounds(state, [&] { return burst(kind); }, [&] { return burst(Kind::kRootNull); });
    })->UseManualTime();
  };
  pairWithRoot(Kind::kCapNull);
  if (callbacks) pairWithRoot(Kind::kCallback);
}

#if LRPC_BENCH_LOCAL
class CapsLocal final : private OwnsNamesDir, public CapsSession {
 public:
  static Result<std::unique_ptr<CapsLocal>> start(TransferMode mode) {
    std::unique_ptr<CapsLocal> s(new CapsLocal());
    ServerSpec spec;
    spec.kind = "caps_local";
    if (Status st = startLocal<Root>(spec, "caps", s->dir_, mode, s->server_, s->root_); !st) return st;
    return s;
  }

 private:
  CapsLocal() = default;
};
#endif

#if LRPC_BENCH_NET
class CapsNet final : public CapsSession {
 public:
  // secure: authenticated and encrypted sessions, the callback host's included.
  static Result<std::unique_ptr<CapsNet>> start(net::ReceiveMode mode, const NetnsPair& netns, bool secure) {
    std::unique_ptr<CapsNet> s(new CapsNet());
    ServerSpec spec;
    spec.kind = "caps_net";
    if (Status st = startNet<Root>(spec, "caps", mode, &netns, s->server_, s->root_, secure); !st) return st;
    return s;
  }

 private:
  CapsNet() = default;
};
#endif

}  // namespace

void registerCaps(BenchContext& ctx) {
#if LRPC_BENCH_LOCAL
  addKinds<CapsLocal>(ctx, "lrpc", true, [] { return CapsLocal::start(TransferMode::kAdaptive); });
#endif
#if LRPC_BENCH_NET
  for (bool secure : {false, true}) {
    addKinds<CapsNet>(ctx, secure ? "net_veth_secure" : "net_veth", true,
                      [&ctx, secure]() -> Result<std::unique_ptr<CapsNet>> {
                        Result<const NetnsPair*> netns = ctx.netns();
                        if (!netns) return netns.status();
                        return CapsNet::start(net::ReceiveMode::kBusyPoll, *netns.value(), secure);
                      });
  }
#endif
  (void)ctx;
}

int serveCapsLocal(int readyFd, int argc, char** argv) {
  return serveLocal<Root>(readyFd, argc, argv, [] { return std::make_unique<RootImpl>(); });
}

int serveCapsNet(int readyFd, int argc, char** argv) {
  return serveNet<Root>(readyFd, argc, argv, [] { return std::make_unique<RootImpl>(); });
}

#else  // neither layer in this build

void registerCaps(BenchContext&) {}
int serveCapsLocal(int, int, char**) { return 2; }
int serveCapsNet(int, int, char**) { return 2; }

#endif

}  // namespace lrpc::bench
