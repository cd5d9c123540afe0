#include "transport/secure_client_endpoint.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

#include "transport/secure/messages.h"
#include "transport/wire.h"

namespace lrpc::net {

namespace {
using Clock = std::chrono::steady_clock;
namespace sec = lrpc::secure;

sec::Bytes asBytes(std::span<const std::byte> b) noexcept {
  return {reinterpret_cast<const uint8_t*>(b.data()), b.size()};
}
}  // namespace

std::array<uint8_t, 6> sourceBytes(NetAddress a) noexcept {
  std::array<uint8_t, 6> out{};
  std::memcpy(out.data(), &a.ip, 4);
  uint16_t port = htons(a.port);
  std::memcpy(out.data() + 4, &port, 2);
  return out;
}

namespace {
// Seals `chunk` into `storage` and fills `out` with one piece per datagram.
Status sealChunk(sec::DataChannel& channel, std::span<const OutDatagram> chunk, std::vector<uint8_t>& storage,
                 std::vector<OutDatagram>& out, Clock::time_point now) noexcept {
  size_t total = 0;
  for (const OutDatagram& d : chunk) {
    for (uint32_t i = 0; i < d.iovCount; ++i) total += d.iov[i].iov_len;
    total += sec::data::kOverhead;
  }
  try {
    if (storage.size() < total) storage.resize(total);
    out.resize(chunk.size());
  } catch (...) {
    return Status(Errc::kResourceExhausted, "no memory to seal a batch");
  }
  size_t at = 0;
  for (size_t k = 0; k < chunk.size(); ++k) {
    const OutDatagram& d = chunk[k];
    // The clear datagram is gathered where seal() wants it (after the 16-byte outer
    // header) and sealed in place: one copy, which the AEAD's output needs anyway.
    uint8_t* base = storage.data() + at;
    size_t plain = 0;
    for (uint32_t i = 0; i < d.iovCount; ++i) {
      if (d.iov[i].iov_len == 0) continue;
      std::memcpy(base + sec::data::kHeaderBytes + plain, d.iov[i].iov_base, d.iov[i].iov_len);
      plain += d.iov[i].iov_len;
    }
    auto n = channel.seal({base + sec::data::kHeaderBytes, plain}, {base, plain + sec::data::kOverhead}, now);
    if (!n) return n.status();
    out[k].to = d.to;
    out[k].iov[0] = {base, *n};
    out[k].iovCount = 1;
    at += *n;
  }
  return {};
}
}  // namespace

Status sealAndSend(sec::DataChannel& channel, std::span<const OutDatagram> batch, Endpoint& inner,
                   std::vector<uint8_t>& storage, std::vector<OutDatagram>& out, Clock::time_point now) noexcept {
  Status result;
  while (!batch.empty()) {
    const auto chunk = batch.first(std::min(batch.size(), kSealChunk));
    batch = batch.subspan(chunk.size());
    // A datagram that cannot be sealed (the key's counter space spent, no memory) is not sent,
    // nor are those after it: the caller learns why.
    if (Status s = sealChunk(channel, chunk, storage, out, now); !s.isOk()) return s;
    // A send error loses these datagrams as a network would (the protocol resends), so the
    // rest still go, as the endpoints do within one batch; the last error is reported.
    if (Status s = inner.send(out); !s.isOk()) result = s;
  }
  return result;
}

// Opens each datagram from the server into the endpoint's buffer and hands on the clear one.
class SecureClientEndpoint::OpenSink final : public DatagramSink {
 public:
  OpenSink(SecureClientEndpoint& e, DatagramSink& next) : e_(e), next_(next) {}
  void onDatagram(const Datagram& d) noexcept override {
    auto bytes = asBytes(d.bytes);
    const uint8_t type = sec::peekType(bytes.data(), bytes.size());
    if (d.from == e_.server_ && type == uint8_t(sec::MessageType::kReply)) {
      e_.onReply(bytes);
      return;
    }
    if (!(d.from == e_.server_) || type != uint8_t(sec::MessageType::kData) ||
        bytes.size() < sec::data::kOverhead || e_.opened_.size() < bytes.size()) {
      ++e_.dropped_;  // a late handshake reply, clear text, or not from the server
      return;
    }
    auto n = e_.opening().open(bytes, e_.opened_);
    if (!n) {
      ++e_.dropped_;  // forged, replayed or stale: silently, as a lost datagram
      return;
    }
    e_.waiting_.store(false, std::memory_order_relaxed);
    ++delivered;
    next_.onDatagram({d.from, std::as_bytes(std::span(e_.opened_.data(), *n))});
  }
  size_t delivered = 0;

 private:
  SecureClientEndpoint& e_;
  DatagramSink& next_;
};

Result<std::unique_ptr<SecureClientEndpoint>> SecureClientEndpoint::connect(std::unique_ptr<Endpoint> inner,
                                                                           NetAddress server, sec::Initiator initiator,
                                                                           const SecureHandshakeTiming& timing,
                                                                           const sec::DataOptions& data) {
  struct ReplySink final : DatagramSink {
    NetAddress server;
    std::vector<uint8_t> reply;   // the last handshake reply or cookie reply, if any
    uint8_t type = 0;
    void onDatagram(const Datagram& d) noexcept override {
      auto b = asBytes(d.bytes);
      uint8_t t = sec::peekType(b.data(), b.size());
      if (!(d.from == server) || (t != uint8_t(sec::MessageType::kReply) && t != uint8_t(sec::MessageType::kCookieReply))) return;
      try {
        reply.assign(b.begin(), b.end());
        type = t;
      } catch (...) {
      }
    }
  } sink;
  sink.server = server;

  const auto start = Clock::now();
  const auto deadline = start + timing.timeout;
  auto rto = std::chrono::duration_cast<Clock::duration>(timing.initialRto);
  std::optional<sec::TransportKeys> keys;
  bool cookieTaken = false;
  bool sendNow = true;
  while (!keys) {
    auto now = Clock::now();
    if (now >= deadline) {
      return Status(Errc::kPeerDied,
                    "no answer to the secure handshake from " + server.toString() + " within " +
                        std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(timing.timeout).count()) +
                        " ms: the server key pinned for it (?key=) may be wrong, this client's key or pre-shared "
                        "key may not be accepted there, or no secure lrpc server runs there (udp+clear:// for a "
                        "clear-text one)");
    }
    if (sendNow) {
      // Each try is a new hello (a new ephemeral key and a later timestamp): the server
      // refuses a hello it has seen, so a retransmitted copy could never be answered.
      auto hello = initiator.writeHello();
      if (!hello) return hello.status();
      OutDatagram d{server, {{hello->data(), hello->size()}}, 1};
      if (Status s = inner->send({&d, 1}); !s.isOk() && s.code() != Errc::kPeerDied) return s;
      sendNow = false;
    }
    auto until = std::min(deadline, Clock::now() + rto);
    while (Clock::now() < until) {
      sink.type = 0;
      auto got = inner->receive(sink, timing.mode, until - Clock::now());
      if (!got && got.status().code() != Errc::kPeerDied) return got.status();
      if (!got) break;  // nobody on that port (yet): retry after the timeout
      if (sink.type == uint8_t(sec::MessageType::kCookieReply)) {
        // The server is under load: prove our address with its cookie, once per connect.
        if (!cookieTaken && initiator.readCookieReply(sink.reply).isOk()) {
          cookieTaken = true;
          sendNow = true;
          break;
        }
      } else if (sink.type == uint8_t(sec::MessageType::kReply)) {
        auto k = initiator.readReply(sink.reply);
        if (k) {  // else a forged or stale reply: keep waiting for the real one
          keys = std::move(*k);
          break;
        }
      }
    }
    if (!keys && !sendNow) {
      sendNow = true;
      rto = std::min<Clock::duration>(rto * 2, std::chrono::duration_cast<Clock::duration>(timing.maxRto));
    }
  }
  auto channel = sec::DataChannel::create(*keys, data);
  if (!channel) return channel.status();
  std::unique_ptr<SecureClientEndpoint> e(
      new SecureClientEndpoint(std::move(inner), server, std::move(initiator), std::move(*channel)));
  e->handshakeTime_ = Clock::now() - start;
  e->timing_ = timing;
  e->data_ = data;
  try {
    e->opened_.resize(kMaxDatagramLimit);
  } catch (...) {
    return Status(Errc::kResourceExhausted, "no memory for the receive buffer");
  }
  return e;
}

Status SecureClientEndpoint::send(std::span<const OutDatagram> batch) noexcept {
  MutexLock lock(sendMu_);
  const auto now = Clock::now();
  Status s = sealAndSend(channel_, batch, *inner_, sealed_, out_, now);
  maybeRehandshake(now);
  return s;
}

void SecureClientEndpoint::maybeRehandshake(Clock::time_point now) noexcept {
  // A send after a long pause (longer than any retransmission gap) starts a new wait: the
  // datagram before the pause may have been one that is never answered (an ack, a bye).
  const auto pause = std::max(2 * timing_.rehandshakeAfter, 2 * timing_.maxRto);
  const bool resumed = now - lastSend_ > pause;
  lastSend_ = now;
  if (!waiting_.exchange(true, std::memory_order_relaxed) || resumed) {
    waitingSince_ = now;  // the first send since we last heard from the server
    return;
  }
  if (now - waitingSince_ < timing_.rehandshakeAfter || now - lastHello_ < timing_.rehandshakeAfter) return;
  // Silent for a while although we kept sending (the channel retransmits): perhaps the server
  // restarted and drops what we seal. A new handshake; the old keys stay in use until it
  // completes, so a server that was merely slow loses nothing.
  lastHello_ = now;
  MutexLock hello(helloMu_);
  auto m = initiator_.writeHello();
  if (!m) return;
  helloOut_ = true;
  OutDatagram d{server_, {{m->data(), m->size()}}, 1};
  (void)inner_->send({&d, 1});
}

void SecureClientEndpoint::onReply(sec::Bytes reply) noexcept {
  std::optional<sec::DataChannel> next;
  {
    MutexLock hello(helloMu_);
    if (!helloOut_) return;  // a duplicate of the first handshake's reply
    auto keys = initiator_.readReply(reply);
    if (!keys) return;  // forged, or for an older hello
    helloOut_ = false;
    auto channel = sec::DataChannel::create(*keys, data_);
    if (!channel) return;
    next.emplace(std::move(*channel));
  }
  // This thread alone opens; senders wait for the new keys.
  MutexLock lock(sendMu_);
  channel_ = std::move(*next);
  rehandshakes_.fetch_add(1, std::memory_order_relaxed);
}

Result<size_t> SecureClientEndpoint::receive(DatagramSink& sink, ReceiveMode mode,
                                             std::chrono::nanoseconds timeout) noexcept {
  OpenSink open(*this, sink);
  auto got = inner_->receive(open, mode, timeout);
  if (!got) return got.status();
  return open.delivered;
}

}  // namespace lrpc::net
