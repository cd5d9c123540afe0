// IPv4 socket addresses, for the raw sockets of the tests and the benchmark (bind, connect,
// sendto).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdint>
#include <string>

namespace lrpc::testing {

// `ip` ("0.0.0.0": any) at `port`.
inline sockaddr_in inetAddr(const std::string& ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  ::inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
  return a;
}

// 127.0.0.1 at `port`.
inline sockaddr_in loopbackTo(uint16_t port) { return inetAddr("127.0.0.1", port); }

}  // namespace lrpc::testing
