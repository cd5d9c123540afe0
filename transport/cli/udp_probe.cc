#include "transport/cli/udp_probe.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "transport/client.h"
#include "transport/endpoint.h"
#include "transport/random.h"
#include "transport/udp_socket.h"
#include "transport/wire.h"

namespace lrpc::cli {

namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kProbeWindow = 1;
constexpr char kProbeInterface[] = "lrpc ping (no interface)";

}  // namespace

UdpProbe::UdpProbe(int fd, std::string server, std::string name) noexcept
    : fd_(fd), server_(std::move(server)), name_(std::move(name)) {}

UdpProbe::~UdpProbe() { ::close(fd_); }

Result<std::unique_ptr<UdpProbe>> UdpProbe::open(std::string_view uri) {
  Result<net::UdpUri> parts = net::parseUdpUri(uri);
  if (!parts.isOk()) return parts.status();
  // The probe is a clear-text session hello: a secure server drops it unanswered, so a
  // pinned key would only turn into a misleading timeout.
  if (!parts->key.empty()) {
    return Status(Errc::kUnsupported, "ping speaks clear text only; a secure server (?key=) does not answer it");
  }
  Result<net::NetAddress> addr = net::parseAddress(parts->hostPort);
  if (!addr.isOk()) return addr.status();
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::fromErrno(errno, "socket");
  auto probe = std::unique_ptr<UdpProbe>(new UdpProbe(fd, addr->toString(), parts->name));
  sockaddr_in sa = net::toSockaddr(*addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) return Status::fromErrno(errno, "connect");
  return probe;
}

Result<std::chrono::nanoseconds> UdpProbe::probe(std::chrono::nanoseconds timeout) {
  uint64_t nonce = net::detail::randomCookie();
  net::HelloBody body{};
  body.window = kProbeWindow;
  body.maxDatagram = static_cast<uint32_t>(net::kDefaultMaxDatagram);
  std::string payload;
  if (Status s = net::encodeHello(body, name_, kProbeInterface, payload); !s.isOk()) return s;
  net::PacketHeader h = net::makeHeader(net::PacketType::kHello, 0, nonce, 0);
  h.total = static_cast<uint32_t>(payload.size());
  std::string datagram(reinterpret_cast<const char*>(&h), sizeof h);
  datagram += payload;

  Clock::time_point start = Clock::now();
  Clock::time_point deadline = start + timeout;
  // A refused send (ICMP port unreachable from an earlier probe) is not final: keep waiting.
  (void)::send(fd_, datagram.data(), datagram.size(), MSG_NOSIGNAL);
  std::byte buf[net::kDefaultMaxDatagram];
  for (;;) {
    Clock::time_point now = Clock::now();
    if (now >= deadline) {
      return Status(Errc::kDeadlineExceeded, "no answer from " + server_ + " (server dead or unreachable)");
    }
    int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count()) + 1;
    pollfd p{fd_, POLLIN, 0};
    int r = ::poll(&p, 1, ms);
    if (r < 0 && errno != EINTR) return Status::fromErrno(errno, "poll");
    if (r <= 0) continue;
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0) {
      if (errno == ECONNREFUSED) {
        return Status(Errc::kPeerDied, "nothing listens on " + server_ + " (port unreachable: server dead?)");
      }
      if (errno == EINTR || errno == EAGAIN) continue;
      return Status::fromErrno(errno, "recv");
    }
    std::chrono::nanoseconds rtt = Clock::now() - start;
    Result<net::Packet> p2 = net::decodePacket({buf, static_cast<size_t>(n)});
    if (!p2.isOk() || p2->type() != net::PacketType::kWelcome || p2->header.cookie != nonce) continue;  // stray
    std::string text(reinterpret_cast<const char*>(p2->payload.data()), p2->payload.size());
    Errc code = errcFromWire(p2->header.status);
    if (code == Errc::kNotFound) return Status(Errc::kNotFound, server_ + ": " + text);
    if (code == Errc::kOk) {
      // Only an interface whose id is 0 would be accepted; close the session we were given.
      net::PacketHeader bye = net::makeHeader(net::PacketType::kBye, p2->header.session, 0, 0);
      if (Result<net::WelcomeBody> w = net::decodeWelcome(p2->payload); w.isOk()) bye.cookie = w->cookie;
      (void)::send(fd_, &bye, sizeof bye, MSG_NOSIGNAL);
      text = "session opened";
    }
    answer_ = std::move(text);
    return rtt;
  }
}

}  // namespace lrpc::cli
