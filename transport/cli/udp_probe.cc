#include "transport/cli/udp_probe.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "transport/client.h"
#include "transport/endpoint.h"
#include "transport/random.h"
#include "transport/secure/keys.h"
#include "transport/secure/messages.h"
#include "transport/udp_socket.h"

namespace lrpc::cli {

namespace {

namespace sec = lrpc::secure;

constexpr uint32_t kProbeWindow = 1;
constexpr char kProbeInterface[] = "lrpc ping (no interface)";

std::span<const uint8_t> asU8(std::span<const std::byte> b) {
  return {reinterpret_cast<const uint8_t*>(b.data()), b.size()};
}

}  // namespace

UdpProbe::UdpProbe(OwnedFd fd, std::string server, std::string name) noexcept
    : fd_(std::move(fd)), server_(std::move(server)), name_(std::move(name)) {}

Result<std::unique_ptr<UdpProbe>> UdpProbe::open(std::string_view uri, const ProbeKeys& keys) {
  Result<net::UdpUri> parts = net::parseUdpUri(uri);
  if (!parts.isOk()) return parts.status();
  if (parts->key.empty() && (!keys.keyFile.empty() || !keys.pskFile.empty())) {
    return Status(Errc::kInvalidArgument, "--key and --psk are for a secure server: pin its key in the address (?key=)");
  }
  std::optional<sec::Initiator> initiator;
  if (!parts->key.empty()) {
    Result<sec::PublicKey> serverKey = sec::PublicKey::fromText(parts->key);
    if (!serverKey.isOk()) return serverKey.status();
    Result<sec::KeyPair> self = keys.keyFile.empty() ? sec::KeyPair::generate() : sec::loadKeyPair(keys.keyFile);
    if (!self.isOk()) return self.status();
    std::optional<sec::PresharedKey> psk;
    if (!keys.pskFile.empty()) {
      Result<sec::PresharedKey> loaded = sec::loadPresharedKey(keys.pskFile);
      if (!loaded.isOk()) return loaded.status();
      psk = *loaded;
    }
    Result<sec::Initiator> made = sec::Initiator::create(*self, *serverKey, psk);
    if (!made.isOk()) return made.status();
    initiator.emplace(std::move(*made));
  }
  Result<net::NetAddress> addr = net::parseAddress(parts->hostPort);
  if (!addr.isOk()) return addr.status();
  OwnedFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Status::fromErrno(errno, "socket");
  sockaddr_in sa = net::toSockaddr(*addr);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) return Status::fromErrno(errno, "connect");
  auto probe = std::unique_ptr<UdpProbe>(new UdpProbe(std::move(fd), addr->toString(), parts->name));
  probe->initiator_ = std::move(initiator);
  return probe;
}

Result<size_t> UdpProbe::receiveRaw(Clock::time_point deadline) {
  for (;;) {
    Clock::time_point now = Clock::now();
    if (now >= deadline) {
      return Status(Errc::kDeadlineExceeded, "no answer from " + server_ + " (server dead or unreachable)");
    }
    int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count()) + 1;
    pollfd p{fd_.get(), POLLIN, 0};
    int r = ::poll(&p, 1, ms);
    if (r < 0 && errno != EINTR) return Status::fromErrno(errno, "poll");
    if (r <= 0) continue;
    ssize_t n = ::recv(fd_.get(), buf_.data(), buf_.size(), 0);
    if (n < 0) {
      if (errno == ECONNREFUSED) {
        return Status(Errc::kPeerDied, "nothing listens on " + server_ + " (port unreachable: server dead?)");
      }
      if (errno == EINTR || errno == EAGAIN) continue;
      return Status::fromErrno(errno, "recv");
    }
    return static_cast<size_t>(n);
  }
}

Result<std::span<const std::byte>> UdpProbe::receiveDatagram(Clock::time_point deadline) {
  for (;;) {
    Result<size_t> n = receiveRaw(deadline);
    if (!n.isOk()) return n.status();
    std::span<const std::byte> raw(buf_.data(), *n);
    if (!channel_) return raw;
    // Sealed: only what opens under the session's keys is the server's (the rest is dropped,
    // as loss would be).
    auto b = asU8(raw);
    if (sec::peekType(b.data(), b.size()) != uint8_t(sec::MessageType::kData)) continue;
    Result<size_t> opened = channel_->open(b, {reinterpret_cast<uint8_t*>(opened_.data()), opened_.size()});
    if (!opened.isOk()) continue;
    return std::span<const std::byte>(opened_.data(), *opened);
  }
}

Status UdpProbe::sendDatagram(std::span<const std::byte> bytes) {
  std::span<const std::byte> out = bytes;
  if (channel_) {
    Result<size_t> n = channel_->seal(asU8(bytes), sealed_);
    if (!n.isOk()) return n.status();
    out = std::as_bytes(std::span(sealed_.data(), *n));
  }
  // A refused send (ICMP port unreachable from an earlier probe) is not final: keep waiting.
  (void)::send(fd_.get(), out.data(), out.size(), MSG_NOSIGNAL);
  return {};
}

Status UdpProbe::handshake(Clock::time_point deadline) {
  const Clock::time_point start = Clock::now();
  bool cookieTaken = false;
  for (;;) {
    // Each try is a new hello: the server refuses one it has seen.
    Result<std::vector<uint8_t>> hello = initiator_->writeHello();
    if (!hello.isOk()) return hello.status();
    (void)::send(fd_.get(), hello->data(), hello->size(), MSG_NOSIGNAL);
    for (bool resend = false; !resend;) {
      Result<size_t> n = receiveRaw(deadline);
      if (!n.isOk()) {
        if (n.status().code() != Errc::kDeadlineExceeded) return n.status();
        return Status(Errc::kDeadlineExceeded,
                      "no answer to the secure handshake from " + server_ +
                          ": the key pinned in the address (?key=) may be wrong, the server may not accept this "
                          "client's key (--key FILE) or may need a pre-shared key (--psk FILE), or it serves clear "
                          "text only (udp+clear://)");
      }
      auto b = asU8(std::span<const std::byte>(buf_.data(), *n));
      const uint8_t type = sec::peekType(b.data(), b.size());
      if (type == uint8_t(sec::MessageType::kCookieReply) && !cookieTaken) {
        // The server is under load: prove our address with its cookie, once.
        if (initiator_->readCookieReply(b).isOk()) {
          cookieTaken = true;
          resend = true;
        }
      } else if (type == uint8_t(sec::MessageType::kReply)) {
        Result<sec::TransportKeys> keys = initiator_->readReply(b);
        if (!keys.isOk()) continue;  // forged or stale: wait for the real one
        Result<sec::DataChannel> channel = sec::DataChannel::create(*keys);
        if (!channel.isOk()) return channel.status();
        channel_.emplace(std::move(*channel));
        handshakeTime_ = Clock::now() - start;
        return {};
      }
    }
  }
}

Result<std::chrono::nanoseconds> UdpProbe::probe(std::chrono::nanoseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  if (secure() && !channel_) {
    if (Status s = handshake(deadline); !s.isOk()) return s;
  }
  uint64_t nonce = net::detail::randomCookie();
  net::HelloBody body{};
  body.window = kProbeWindow;
  body.maxDatagram = static_cast<uint32_t>(net::kDefaultMaxDatagram - (secure() ? sec::DataChannel::kOverhead : 0));
  std::string payload;
  if (Status s = net::encodeHello(body, name_, kProbeInterface, payload); !s.isOk()) return s;
  net::PacketHeader h = net::makeHeader(net::PacketType::kHello, 0, nonce, 0);
  h.total = static_cast<uint32_t>(payload.size());
  std::vector<std::byte> datagram(sizeof h + payload.size());
  std::memcpy(datagram.data(), &h, sizeof h);
  std::memcpy(datagram.data() + sizeof h, payload.data(), payload.size());

  const Clock::time_point start = Clock::now();
  if (Status s = sendDatagram(datagram); !s.isOk()) return s;
  for (;;) {
    Result<std::span<const std::byte>> got = receiveDatagram(deadline);
    if (!got.isOk()) return got.status();
    std::chrono::nanoseconds rtt = Clock::now() - start;
    Result<net::Packet> p = net::decodePacket(*got);
    if (!p.isOk() || p->type() != net::PacketType::kWelcome || p->header.cookie != nonce) continue;  // stray
    std::string text(reinterpret_cast<const char*>(p->payload.data()), p->payload.size());
    Errc code = errcFromWire(p->header.status);
    if (code == Errc::kNotFound) return Status(Errc::kNotFound, server_ + ": " + text);
    if (code == Errc::kOk) {
      // Only an interface whose id is 0 would be accepted; close the session we were given.
      net::PacketHeader bye = net::makeHeader(net::PacketType::kBye, p->header.session, 0, 0);
      if (Result<net::WelcomeBody> w = net::decodeWelcome(p->payload); w.isOk()) bye.cookie = w->cookie;
      (void)sendDatagram(std::as_bytes(std::span(&bye, 1)));
      text = "session opened";
    }
    answer_ = std::move(text);
    return rtt;
  }
}

}  // namespace lrpc::cli
