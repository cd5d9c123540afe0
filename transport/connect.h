// One entry point for both paths. A client names what it wants:
//
//   auto paper = lrpc::connect<lrpc::paper::Paper>("paper");                        // same host
//   auto paper = lrpc::connect<lrpc::paper::Paper>("udp://10.0.0.2:7000/paper?key=...");   // remote (secure)
//
// and gets the same generated Foo::Client either way; the binding's remote bit (the first
// thing every generated method tests) picks the A-stack path or the network path. A server
// exports one interface on the same host and on the network at once with NetExporter.
#pragma once

#include <memory>
#include <string_view>

#include "runtime/contract.h"
#include "runtime/exporter.h"
#include "runtime/import.h"
#include "transport/client.h"
#include "transport/server.h"

namespace lrpc {

struct ConnectOptions {
  ImportOptions local;        // for "name"
  net::ClientOptions remote;  // for "udp://host:port/name"
};

// "udp://..." and "udp+clear://..." go over the network transport; anything else is a same-host name.
Result<std::shared_ptr<Binding>> connectBinding(std::string_view target, const InterfaceDescriptor& iface,
                                                const ConnectOptions& options = {});

template <class Iface>
Result<typename Iface::Client> connect(std::string_view target, const ConnectOptions& options = {}) {
  auto b = connectBinding(target, Iface::kDescriptor, options);
  if (!b.isOk()) return b.status();
  return typename Iface::Client(std::move(*b));
}

namespace net {

// Serves each added interface both through the runtime's Exporter (same-host A-stacks) and
// through a UdpServer (the network), under the same name. The implementation must be safe
// to call from several threads at once (the Exporter's server threads and the UDP polling
// thread run it concurrently).
class NetExporter {
 public:
  struct Options {
    lrpc::ExporterOptions local;
    net::ServerOptions remote;
  };
  explicit NetExporter(Options options = {}) : exporter_(std::move(options.local)), udp_(options.remote) {}

  template <class Iface, class Impl>
  Status add(std::string_view name, Impl& impl) {
    typename Iface::Server* server = &impl;
    return add(name, Iface::kDescriptor, server);
  }
  // Exports on the same host at once; on the network from start() on.
  Status add(std::string_view name, const InterfaceDescriptor& iface, void* impl);
  // Binds the UDP side ("0.0.0.0:7000"; port 0 picks one), starts it, returns the port.
  Result<uint16_t> start(std::string_view address);

  lrpc::Exporter& local() noexcept { return exporter_; }
  UdpServer& remote() noexcept { return udp_; }

 private:
  // Declared in this order so that the UDP thread stops before the Exporter goes away.
  lrpc::Exporter exporter_;
  UdpServer udp_;
};

}  // namespace net
}  // namespace lrpc
