#include "transport/secure/data_channel.h"

#include <cstring>
#include <limits>
#include <utility>

namespace lrpc::secure {
namespace {

constexpr uint64_t kReservedCounter = std::numeric_limits<uint64_t>::max();  // REKEY's nonce

}  // namespace

Result<Key> rekey(const Key& key) {
  static constexpr std::array<uint8_t, kKeyBytes> kZeros{};
  std::array<uint8_t, kKeyBytes + kTagBytes> out{};
  if (Status s = aeadSeal(key, counterNonce(kReservedCounter), {}, kZeros, out); !s.isOk()) return s;
  Key next{};
  std::memcpy(next.data(), out.data(), next.size());
  wipe(out);
  return next;
}

Result<DataChannel> DataChannel::create(const TransportKeys& keys, DataOptions options, Instant now) {
  if (options.rekeyAfterMessages == 0) return Status(Errc::kInvalidArgument, "rekeyAfterMessages is 0");
  DataChannel c;
  c.options_ = options;
  c.localIndex_ = keys.localIndex;
  c.remoteIndex_ = keys.remoteIndex;
  c.send_.key = keys.send;
  c.send_.started = now;
  auto sendCtx = AeadContext::forSealing(keys.send);
  if (!sendCtx) return sendCtx.status();
  c.send_.ctx = std::move(*sendCtx);
  c.current_.key = keys.receive;
  auto recvCtx = AeadContext::forOpening(keys.receive);
  if (!recvCtx) return recvCtx.status();
  c.current_.ctx = std::move(*recvCtx);
  c.current_.valid = true;
  return c;
}

DataChannel::~DataChannel() {
  wipe(send_.key);
  wipe(previous_.key);
  wipe(current_.key);
  wipe(next_.key);
}

Status DataChannel::rotateSend(Instant now) {
  auto k = rekey(send_.key);
  if (!k) return k.status();
  auto ctx = AeadContext::forSealing(*k);
  if (!ctx) return ctx.status();
  send_.key = *k;  // the old key is gone: datagrams of earlier generations stay secret
  wipe(*k);
  send_.ctx = std::move(*ctx);
  send_.counter = 0;
  ++send_.generation;
  send_.started = now;
  return {};
}

Result<size_t> DataChannel::seal(Bytes plain, MutableBytes out, Instant now) {
  if (out.size() < plain.size() + kOverhead)
    return Status(Errc::kInvalidArgument, "seal: output smaller than the datagram plus 32 bytes");
  // A count limit at the top of the counter space means "never by count": then the counter
  // runs out below and sealing is refused rather than wrapped.
  const bool byCount = options_.rekeyAfterMessages < kReservedCounter && send_.counter >= options_.rekeyAfterMessages;
  if (byCount || now - send_.started >= options_.rekeyAfterTime) {
    if (Status s = rotateSend(now); !s.isOk()) return s;
  }
  if (send_.counter >= kReservedCounter)
    return Status(Errc::kResourceExhausted, "seal: counter space of this key spent; a new handshake is needed");
  const uint64_t counter = send_.counter++;
  uint8_t* h = out.data();
  putPrefix(h, MessageType::kData, static_cast<uint8_t>(send_.generation));
  putU32(h + data::kReceiver, remoteIndex_);
  putU64(h + data::kCounter, counter);
  const size_t sealed = plain.size() + kTagBytes;
  if (Status s = send_.ctx.seal(counterNonce(counter), Bytes(h, data::kHeaderBytes), plain,
                                out.subspan(data::kHeaderBytes, sealed));
      !s.isOk())
    return s;
  return data::kHeaderBytes + sealed;
}

std::optional<uint32_t> DataChannel::receiverOf(Bytes datagram) noexcept {
  if (datagram.size() < kOverhead || peekType(datagram.data(), datagram.size()) != static_cast<uint8_t>(MessageType::kData))
    return std::nullopt;
  return getU32(datagram.data() + data::kReceiver);
}

Status DataChannel::deriveNext() {
  auto k = rekey(current_.key);
  if (!k) return k.status();
  auto ctx = AeadContext::forOpening(*k);
  if (!ctx) return ctx.status();
  next_.key = *k;
  wipe(*k);
  next_.ctx = std::move(*ctx);
  next_.window = ReplayWindow{};
  next_.generation = current_.generation + 1;
  next_.valid = true;
  return {};
}

Result<size_t> DataChannel::open(Bytes datagram, MutableBytes out, Instant now) {
  auto receiver = receiverOf(datagram);
  if (!receiver) return Status(Errc::kBadFrame, "not a data datagram");
  if (*receiver != localIndex_) return Status(Errc::kBadFrame, "data datagram for another session");
  const size_t clear = datagram.size() - kOverhead;
  if (out.size() < clear) return Status(Errc::kInvalidArgument, "open: output smaller than the datagram");
  const uint8_t generation = datagram[3];
  const uint64_t counter = getU64(datagram.data() + data::kCounter);
  if (counter == kReservedCounter) return Status(Errc::kBadFrame, "data datagram with the reserved counter");

  if (previous_.valid && now >= previousUntil_) previous_ = Receiver{};
  Receiver* r = nullptr;
  if (generation == static_cast<uint8_t>(current_.generation)) {
    r = &current_;
  } else if (previous_.valid && generation == static_cast<uint8_t>(previous_.generation) && now < previousUntil_) {
    r = &previous_;
  } else if (generation == static_cast<uint8_t>(current_.generation + 1)) {
    if (!next_.valid) {
      if (Status s = deriveNext(); !s.isOk()) return s;
    }
    r = &next_;
  } else {
    return Status(Errc::kBadFrame, "data datagram of an unknown or expired key generation");
  }
  switch (r->window.check(counter)) {
    case ReplayWindow::Verdict::kFresh: break;
    case ReplayWindow::Verdict::kDuplicate: return Status(Errc::kBadFrame, "replayed data datagram");
    case ReplayWindow::Verdict::kTooOld: return Status(Errc::kBadFrame, "data datagram older than the replay window");
  }
  if (Status s = r->ctx.open(counterNonce(counter), datagram.first(data::kHeaderBytes),
                             datagram.subspan(data::kHeaderBytes), out.first(clear));
      !s.isOk())
    return s;
  r->window.accept(counter);
  if (r == &next_) {
    // The peer has moved on: its previous generation may still have datagrams in flight.
    previous_ = std::move(current_);
    previousUntil_ = now + options_.previousKeyGrace;
    current_ = std::move(next_);
    next_ = Receiver{};
  }
  return clear;
}

}  // namespace lrpc::secure
