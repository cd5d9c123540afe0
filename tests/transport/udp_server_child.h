// The server side of a network test, run in a ForkedServer's child (net_harness.h): a
// UdpServer on the child's address with what the test exports. Neither the server nor the
// objects the test makes for it are ever freed: the child _exits when the test ends.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "transport/server.h"

namespace lrpc::net::testing {

// Starts a UdpServer with `options` on `bind` once `add` has exported into it what the test
// serves; its port, or 0 when anything failed.
inline uint16_t startUdpServer(const std::string& bind, ServerOptions options,
                               const std::function<bool(UdpServer&)>& add) {
  auto* server = new UdpServer(std::move(options));
  if (!add(*server)) return 0;
  auto port = server->bind(bind);
  if (!port.isOk() || !server->start().isOk()) return 0;
  return *port;
}

// A clear-text server's options: for the tests that are about calls, not keys.
inline ServerOptions clearTextServer() {
  ServerOptions so;
  so.security.clearText = true;
  return so;
}

}  // namespace lrpc::net::testing
