#include "transport/callback_host.h"

#include <thread>
#include <utility>

#include "runtime/cap_table.h"
#include "runtime/callbacks.h"
#include "transport/secure_client_endpoint.h"
#include "transport/server.h"

namespace lrpc::net {

NetCallbackHost::NetCallbackHost(std::shared_ptr<CapTable> table, std::unique_ptr<UdpServer> server,
                                 uint16_t port) noexcept
    : table_(std::move(table)), server_(std::move(server)), port_(port) {}

Result<std::unique_ptr<NetCallbackHost>> NetCallbackHost::start(const ReverseSetup& setup, NetAddress local) {
  try {
    ServerOptions o;
    o.mode = setup.mode;
    o.emulatedEndpoint = setup.emulatedEndpoint;
    o.maxDatagram = setup.maxDatagram;
    o.maxCapabilities = setup.maxCapabilities;
    // One peer: a few sessions at most (its re-handshakes), and no half-open crowd to expect.
    o.maxSessions = 4;
    o.maxHalfOpen = 16;
    o.workers = 2;
    o.gro = false;  // its caller reads the socket too (UdpServer::takeArrived)
    if (setup.self) {
      o.security.keyPair = setup.self;
      o.security.allowedClients = {setup.peer};
      o.security.psk = setup.psk;
    } else {
      o.security.clearText = true;
    }
    auto table = std::make_shared<CapTable>(setup.maxCapabilities);
    auto server = std::make_unique<UdpServer>(o);
    // The tunnel finds its objects in the table; the server pointer is never read.
    if (Status s = server->add(kCallbackService, detail::kCallbackInterface, table.get()); !s.isOk()) return s;
    server->shareCapabilities(table);
    local.port = 0;
    Result<uint16_t> port = Status(Errc::kIoError, "not bound");
    if (Status s = setup.netns.run([&] {
          port = server->bind(local.toString());
          return port.status();
        });
        !s.isOk()) {
      return s;
    }
    if (Status s = server->start(); !s.isOk()) return s;
    return std::unique_ptr<NetCallbackHost>(new NetCallbackHost(std::move(table), std::move(server), *port));
  } catch (const std::exception& e) {
    return Status(Errc::kResourceExhausted, std::string("callback host: ") + e.what());
  }
}

NetCallbackHost::~NetCallbackHost() {
  if (server_ && server_->runsOn(std::this_thread::get_id())) {
    // A thread cannot join itself: one of its own stops the server once this one returns.
    std::thread([server = std::move(server_), table = std::move(table_)] {
      server->stop();
      table->close();
    }).detach();
    return;
  }
  server_.reset();
  table_->close();  // objects a session of the server still shared go now, with the host
}

}  // namespace lrpc::net
