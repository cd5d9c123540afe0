// A UDP socket as an RAII value, and the address conversions the endpoints share.
#pragma once

#include <netinet/in.h>

#include "runtime/status.h"
#include "transport/endpoint.h"

namespace lrpc::net {

// Move-only file descriptor: closes in its destructor.
class OwnedFd {
 public:
  OwnedFd() noexcept = default;
  explicit OwnedFd(int fd) noexcept : fd_(fd) {}
  OwnedFd(OwnedFd&& o) noexcept : fd_(o.release()) {}
  OwnedFd& operator=(OwnedFd&& o) noexcept;
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  ~OwnedFd();
  int get() const noexcept { return fd_; }
  int release() noexcept {
    int f = fd_;
    fd_ = -1;
    return f;
  }

 private:
  int fd_ = -1;
};

sockaddr_in toSockaddr(const NetAddress& a) noexcept;
NetAddress fromSockaddr(const sockaddr_in& s) noexcept;

// Creates, sizes, binds and (when options.connect) connects a blocking UDP socket.
Result<OwnedFd> openUdpSocket(const EndpointOptions& options);
// The address the socket is bound to (the kernel's choice for port 0).
NetAddress boundAddress(int fd) noexcept;

}  // namespace lrpc::net
