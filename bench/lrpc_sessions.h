#pragma once
// The sessions of the lrpc rows whose client is one generated Client and whose server is a
// forked process: what they hold, and (curves.cc, struct_args.cc) how they start on each layer.
// Not in lrpc_common.h: lrpc_bulk_bench includes that one and does not link Google Benchmark,
// which calls.h brings in.

#include <memory>
#include <string>

#include "bench/calls.h"
#include "bench/lrpc_common.h"

namespace lrpc::bench {

// A session's forked server and the `Iface` client bound to it, unbound before the server goes.
// A subclass that LocalSession or NetSession starts names the export (kName) and the server
// process it forks on each layer (kLocalKind, kNetKind: main.cc's table of server kinds).
template <class Iface>
class ClientSession : public Session {
 public:
  using Interface = Iface;
  const ServerProcess* server() const override { return server_.get(); }

 protected:
  ~ClientSession() override {
    client_ = typename Iface::Client();
    server_.reset();
  }
  std::unique_ptr<ServerProcess> server_;
  typename Iface::Client client_;
};

#if LRPC_BENCH_LOCAL
// `Base` (a ClientSession) with its server on this host.
template <class Base>
class LocalSession final : private OwnsNamesDir, public Base {
 public:
  static Result<std::unique_ptr<LocalSession>> start(TransferMode mode) {
    std::unique_ptr<LocalSession> s(new LocalSession());
    ServerSpec spec;
    spec.kind = Base::kLocalKind;
    if (Status st = startLocal<typename Base::Interface>(spec, Base::kName, s->dir_, mode, s->server_, s->client_);
        !st) {
      return st;
    }
    return s;
  }

 private:
  LocalSession() = default;
};
#endif

#if LRPC_BENCH_NET
// `Base` (a ClientSession) with its server across the network, in clear text (startNet).
template <class Base>
class NetSession final : public Base {
 public:
  static Result<std::unique_ptr<NetSession>> start(net::ReceiveMode mode, const NetnsPair* netns) {
    std::unique_ptr<NetSession> s(new NetSession());
    ServerSpec spec;
    spec.kind = Base::kNetKind;
    if (Status st = startNet<typename Base::Interface>(spec, Base::kName, mode, netns, s->server_, s->client_); !st) {
      return st;
    }
    return s;
  }

 private:
  NetSession() = default;
};
#endif

}  // namespace lrpc::bench
