// A UDP socket as an RAII value, and the address conversions the endpoints share.
#pragma once

#include <netinet/in.h>

#include "runtime/base/fd.h"
#include "runtime/base/status.h"
#include "transport/endpoint.h"

namespace lrpc::net {

sockaddr_in toSockaddr(const NetAddress& a) noexcept;
NetAddress fromSockaddr(const sockaddr_in& s) noexcept;

// Creates, sizes, binds and (when options.connect) connects a blocking UDP socket.
Result<OwnedFd> openUdpSocket(const EndpointOptions& options);
// The address the socket is bound to (the kernel's choice for port 0).
NetAddress boundAddress(int fd) noexcept;

}  // namespace lrpc::net
