// One service in another process, on the path a test chooses, and a binding to it: on the same
// host an Exporter in a forked child (adaptive or spinning binding), or over UDP a server
// forked into namespace A of a fresh namespace pair and a client connected from namespace B
// (its socket stays there, so calls may come from any thread). For tests that run the same
// checks on every path.
#pragma once

#include <unistd.h>

#include <functional>
#include <memory>
#include <string>

#include "runtime/exporter.h"
#include "runtime/import.h"
#include "tests/integration/harness.h"
#include "tests/transport/net_harness.h"
#include "transport/client.h"

namespace lrpc::testing {

class ServiceProcess {
 public:
  // Same host: `add(exporter)` exports the service in the child (false: it could not).
  Result<std::shared_ptr<Binding>> startLocal(const std::function<bool(Exporter&)>& add, const InterfaceDescriptor& iface,
                                              const std::string& name, TransferMode mode) {
    child_ = std::make_unique<Child>([&] {
      ExporterOptions o;
      o.dir = dir_.path();
      Exporter exporter(o);
      const bool ok = add(exporter);
      ready_.putByte(ok ? 'k' : 'x');
      if (!ok) return 1;
      for (;;) ::pause();
    });
    char c = 0;
    if (!ready_.get(&c, 1) || c != 'k') return Status(Errc::kIoError, "same-host server did not start");
    ImportOptions io;
    io.dir = dir_.path();
    io.mode = mode;
    return importBinding(name, iface, io);
  }

  // UDP: `serve(bindAddress)` starts the server in the child and returns its port (0: failed).
  template <class Iface>
  Result<typename Iface::Client> startNet(const std::function<uint16_t(const std::string&)>& serve, const std::string& name,
                                          const net::ClientOptions& options) {
    pair_ = std::make_unique<NetnsPair>();
    if (Status s = pair_->create(); !s.isOk()) return s;
    net_ = std::make_unique<net::testing::ForkedServer>(pair_->nsPath(true), pair_->ipA() + ":0", serve);
    if (net_->port() == 0) return Status(Errc::kIoError, "network server did not start");
    const std::string uri = "udp+clear://" + pair_->ipA() + ":" + std::to_string(net_->port()) + "/" + name;
    Result<typename Iface::Client> client = Status(Errc::kIoError, "not connected");
    runIn(pair_->nsPath(false), [&] { client = net::connect<Iface>(uri, options); });
    return client;
  }

  void kill() {
    if (child_) {
      child_->kill();
      (void)child_->wait();
    }
    if (net_) net_->kill();
  }
  NetnsPair* pair() { return pair_.get(); }

 private:
  TempDir dir_;
  Pipe ready_;
  std::unique_ptr<Child> child_;
  std::unique_ptr<NetnsPair> pair_;
  std::unique_ptr<net::testing::ForkedServer> net_;
};

}  // namespace lrpc::testing
