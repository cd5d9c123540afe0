// The client's first steps of a same-host binding done by hand, for tests that stop or break
// the protocol where a real client would not.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>
#include <string>

#include "runtime/base/fd.h"
#include "runtime/names.h"
#include "runtime/protocol.h"
#include "runtime/transfer.h"
#include "tests/integration/test_service.h"

namespace lrpc::testing {

// A socket connected where an import of `name` in `dir` connects; invalid if that failed
// (errno says why).
inline OwnedFd connectToName(const std::string& dir, const std::string& name) {
  OwnedFd sock(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string path = detail::socketPath(dir, name);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (::connect(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return OwnedFd();
  return sock;
}

// The Hello a TestService client opens with, asking for `mode`.
inline detail::Hello testServiceHello(TransferMode mode) {
  detail::Hello hello{};
  hello.magic = detail::kHelloMagic;
  hello.version = kVersion;
  hello.interfaceId = TestService::kDescriptor.id;
  hello.signatureHash = TestService::kDescriptor.signatureHash;
  hello.procedureCount = TestService::kDescriptor.procedureCount;
  hello.mode = static_cast<uint8_t>(mode);
  return hello;
}

}  // namespace lrpc::testing
