#include "transport/udp_socket.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace lrpc::net {

sockaddr_in toSockaddr(const NetAddress& a) noexcept {
  sockaddr_in s{};
  s.sin_family = AF_INET;
  s.sin_addr.s_addr = a.ip;
  s.sin_port = htons(a.port);
  return s;
}

NetAddress fromSockaddr(const sockaddr_in& s) noexcept { return NetAddress{s.sin_addr.s_addr, ntohs(s.sin_port)}; }

std::string NetAddress::toString() const { return std::string(std::string_view(text())); }

NetAddress::Text NetAddress::text() const noexcept {
  Text t;
  in_addr a{};
  a.s_addr = ip;
  if (::inet_ntop(AF_INET, &a, t.buf_, INET_ADDRSTRLEN) == nullptr) t.buf_[0] = '\0';
  t.len_ = std::strlen(t.buf_);
  t.buf_[t.len_++] = ':';
  const lrpc::detail::Decimal decimal(port);  // the view below points into it
  const std::string_view digits = decimal;
  std::memcpy(t.buf_ + t.len_, digits.data(), digits.size());
  t.len_ += digits.size();
  return t;
}

Result<NetAddress> parseAddress(std::string_view hostPort) {
  size_t colon = hostPort.rfind(':');
  if (colon == std::string_view::npos) return Status(Errc::kInvalidArgument, "address needs host:port");
  std::string host(hostPort.substr(0, colon));
  std::string_view portText = hostPort.substr(colon + 1);
  unsigned port = 0;
  auto [end, ec] = std::from_chars(portText.data(), portText.data() + portText.size(), port);
  if (ec != std::errc() || end != portText.data() + portText.size() || port > 65535) {
    return Status(Errc::kInvalidArgument, "bad port in '" + std::string(hostPort) + "'");
  }
  NetAddress out;
  out.port = static_cast<uint16_t>(port);
  in_addr a{};
  if (host.empty()) {
    out.ip = htonl(INADDR_ANY);
  } else if (::inet_pton(AF_INET, host.c_str(), &a) == 1) {
    out.ip = a.s_addr;
  } else {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_DGRAM;
    addrinfo* res = nullptr;
    int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
    if (rc != 0 || res == nullptr) {
      return Status(Errc::kInvalidArgument, "cannot resolve '" + host + "': " + ::gai_strerror(rc));
    }
    out.ip = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr.s_addr;
    ::freeaddrinfo(res);
  }
  return out;
}

Result<ReceiveMode> parseReceiveMode(std::string_view s) {
  if (s == "poll" || s == "busy-poll" || s == "spin") return ReceiveMode::kBusyPoll;
  if (s == "block" || s == "blocking") return ReceiveMode::kBlocking;
  if (s == "adaptive") return ReceiveMode::kAdaptive;
  return Status(Errc::kInvalidArgument, "receive mode must be poll, block or adaptive");
}

Result<OwnedFd> openUdpSocket(const EndpointOptions& options) {
  auto bindAddr = parseAddress(options.bindAddress);
  if (!bindAddr) return bindAddr.status();
  OwnedFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return Status::fromErrno(errno, "socket");
  int size = options.socketBufferBytes;
  // Best effort: the kernel caps these at net.core.[rw]mem_max.
  (void)::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  (void)::setsockopt(fd.get(), SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
  sockaddr_in local = toSockaddr(*bindAddr);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
    return Status::fromErrno(errno, "bind " + bindAddr->toString());
  }
  if (options.connect) {
    sockaddr_in peer = toSockaddr(options.peer);
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&peer), sizeof peer) != 0) {
      return Status::fromErrno(errno, "connect " + options.peer.toString());
    }
  }
  return fd;
}

NetAddress boundAddress(int fd) noexcept {
  sockaddr_in s{};
  socklen_t len = sizeof s;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&s), &len) != 0) return {};
  return fromSockaddr(s);
}

void Backoff::pause(std::chrono::steady_clock::time_point now) noexcept {
  if (since_ == std::chrono::steady_clock::time_point{}) since_ = now;
  if (now - since_ < kYieldAfter) {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
  } else {
    ::sched_yield();
  }
}

}  // namespace lrpc::net
