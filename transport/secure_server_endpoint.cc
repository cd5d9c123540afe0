#include "transport/secure_server_endpoint.h"

#include "runtime/base/log.h"
#include "transport/secure/messages.h"
#include "transport/secure_client_endpoint.h"  // sourceBytes, sealAndSend
#include "transport/wire.h"

namespace lrpc::net {

namespace {
namespace sec = lrpc::secure;
using Clock = std::chrono::steady_clock;

uint64_t peerKey(NetAddress a) noexcept { return (uint64_t{a.ip} << 16) | a.port; }
sec::Bytes asBytes(std::span<const std::byte> b) noexcept {
  return {reinterpret_cast<const uint8_t*>(b.data()), b.size()};
}
}  // namespace

class SecureServerEndpoint::OpenSink final : public DatagramSink {
 public:
  OpenSink(SecureServerEndpoint& e, DatagramSink& next) : e_(e), next_(next) {}
  void onDatagram(const Datagram& d) noexcept override {
    MutexLock lock(e_.receiveMu_);
    e_.onDatagram(d, next_, delivered);
  }
  size_t delivered = 0;

 private:
  SecureServerEndpoint& e_;
  DatagramSink& next_;
};

SecureServerEndpoint::SecureServerEndpoint(std::unique_ptr<Endpoint> inner, sec::KeyPair self, bool clearText,
                                           const ServerSecurity& s)
    : inner_(std::move(inner)),
      self_(std::move(self)),
      clearText_(clearText),
      maxPending_(s.maxPending),
      maxSessions_(s.maxSessions),
      data_(s.data) {}

SecureServerEndpoint::~SecureServerEndpoint() = default;

Result<std::unique_ptr<SecureServerEndpoint>> SecureServerEndpoint::create(std::unique_ptr<Endpoint> inner,
                                                                           ServerKeys keys,
                                                                           const ServerSecurity& security) {
  if (!keys.secure || !keys.self) return Status(Errc::kInvalidArgument, "secure endpoint without a key");
  std::unique_ptr<SecureServerEndpoint> e(
      new SecureServerEndpoint(std::move(inner), *keys.self, keys.clearText, security));
  SecureServerEndpoint* raw = e.get();
  // Called by readHello() on the receiving thread, which holds receiveMu_ (the analysis does
  // not follow a lock into a lambda).
  keys.responder.indexInUse = [raw](uint32_t index) LRPC_NO_THREAD_SAFETY_ANALYSIS {
    return raw->sessionAt(index) != nullptr;
  };
  auto responder = sec::Responder::create(e->self_, std::move(keys.responder));
  if (!responder) return responder.status();
  MutexLock lock(e->receiveMu_);  // nobody else has it yet; the analysis asks for it
  e->responder_.emplace(std::move(*responder));
  e->responder_->prepare();  // the first handshake's ephemeral key, before any hello
  try {
    e->opened_.resize(kMaxDatagramLimit);
  } catch (...) {
    return Status(Errc::kResourceExhausted, "no memory for the receive buffer");
  }
  return e;
}

SecureServerEndpoint::Stats SecureServerEndpoint::stats() const {
  Stats s;
  s.handshakes = handshakes_.load(std::memory_order_relaxed);
  s.cookieReplies = cookieReplies_.load(std::memory_order_relaxed);
  s.refusedHellos = refusedHellos_.load(std::memory_order_relaxed);
  s.droppedData = droppedData_.load(std::memory_order_relaxed);
  s.confirmed = confirmed_.load(std::memory_order_relaxed);
  MutexLock lock(mu_);
  s.pending = pending_;
  s.sessions = byPeer_.size();
  return s;
}

Result<size_t> SecureServerEndpoint::receive(DatagramSink& sink, ReceiveMode mode,
                                             std::chrono::nanoseconds timeout) noexcept {
  OpenSink open(*this, sink);
  auto got = inner_->receive(open, mode, timeout);
  if (!got) return got.status();
  return open.delivered;
}

Result<size_t> SecureServerEndpoint::receiveAside(DatagramSink& sink) noexcept {
  OpenSink open(*this, sink);
  auto got = inner_->receiveAside(open);
  if (!got) return got.status();
  return open.delivered;
}

void SecureServerEndpoint::onDatagram(const Datagram& d, DatagramSink& next, size_t& delivered) noexcept {
  auto b = asBytes(d.bytes);
  switch (sec::peekType(b.data(), b.size())) {
    case uint8_t(sec::MessageType::kHello):
      onHello(d);
      return;
    case uint8_t(sec::MessageType::kData):
      onData(d, next, delivered);
      return;
    case 0:
      // Not a secure datagram: clear text passes only on a server that accepts it.
      if (clearText_ && b.size() >= 2 && sec::getU16(b.data()) == kMagic) {
        ++delivered;
        next.onDatagram(d);
        return;
      }
      [[fallthrough]];
    default:
      droppedData_.fetch_add(1, std::memory_order_relaxed);
  }
}

void SecureServerEndpoint::onHello(const Datagram& d) noexcept {
  auto source = sourceBytes(d.from);
  auto outcome = responder_->readHello(asBytes(d.bytes), source);
  if (!outcome) {
    // Forged, replayed, for another key, not allowed or rate limited: no answer at all, so a
    // prober learns nothing (not even that a server is here, without its key).
    refusedHellos_.fetch_add(1, std::memory_order_relaxed);
    lrpc::detail::logf(LogTopic::kTransport, "secure hello from %s refused: %s", d.from.toString().c_str(),
                       outcome.status().toString().c_str());
    return;
  }
  if (outcome->accepted) {
    auto channel = sec::DataChannel::create(outcome->keys, data_);
    if (!channel) return;
    std::shared_ptr<Session> s;
    try {
      s = std::make_shared<Session>(std::move(*channel));
      s->index = outcome->keys.localIndex;
      s->peer = d.from;
      s->client = outcome->client;
      MutexLock lock(mu_);
      // The pending pool is full: its oldest goes (never a confirmed session).
      while (pending_ >= maxPending_ && !pendingOrder_.empty()) {
        uint32_t oldest = pendingOrder_.front();
        pendingOrder_.pop_front();
        auto it = byIndex_.find(oldest);
        if (it != byIndex_.end() && !it->second->confirmed) erase(oldest);
      }
      byIndex_.emplace(s->index, s);
      pendingOrder_.push_back(s->index);
      ++pending_;
      if (pendingOrder_.size() > 2 * size_t{maxPending_} + 16) {
        // Drop the entries of sessions confirmed or gone meanwhile, so the deque stays bounded.
        std::deque<uint32_t> live;
        for (uint32_t i : pendingOrder_) {
          auto it = byIndex_.find(i);
          if (it != byIndex_.end() && !it->second->confirmed) live.push_back(i);
        }
        pendingOrder_.swap(live);
      }
    } catch (...) {
      return;  // no memory: as a lost hello, the client tries again
    }
    handshakes_.fetch_add(1, std::memory_order_relaxed);
  } else {
    cookieReplies_.fetch_add(1, std::memory_order_relaxed);
  }
  OutDatagram out{d.from, {{outcome->reply.data(), outcome->reply.size()}}, 1};
  (void)inner_->send({&out, 1});
  if (outcome->accepted) responder_->prepare();  // the next handshake's key, now that this one's reply is out
}

void SecureServerEndpoint::onData(const Datagram& d, DatagramSink& next, size_t& delivered) noexcept {
  auto b = asBytes(d.bytes);
  auto index = sec::DataChannel::receiverOf(b);
  Session* found = index ? sessionAt(*index) : nullptr;
  if (found == nullptr || !(found->peer == d.from) || b.size() > opened_.size()) {
    droppedData_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  Session& s = *found;
  auto n = s.channel.open(b, opened_);
  if (!n) {
    droppedData_.fetch_add(1, std::memory_order_relaxed);  // silently: no reply, no state change
    return;
  }
  s.lastActive = ++tick_;
  if (!s.confirmed) {
    MutexLock lock(mu_);
    confirm(byIndex_.find(*index)->second);  // still there: only this thread erases
  }
  ++delivered;
  next.onDatagram({d.from, std::as_bytes(std::span(opened_.data(), *n))});
}

void SecureServerEndpoint::confirm(const std::shared_ptr<Session>& s) noexcept {
  s->confirmed = true;
  --pending_;
  confirmed_.fetch_add(1, std::memory_order_relaxed);
  const uint64_t key = peerKey(s->peer);
  auto old = byPeer_.find(key);
  if (old != byPeer_.end()) {
    erase(old->second->index);  // the same socket shook hands again: its old keys are done
  } else if (byPeer_.size() >= maxSessions_) {
    // Full of confirmed sessions (each from a client that authenticated): the least recently
    // active goes. Scanned only when full.
    auto lru = byPeer_.begin();
    for (auto p = byPeer_.begin(); p != byPeer_.end(); ++p) {
      if (p->second->lastActive < lru->second->lastActive) lru = p;
    }
    erase(lru->second->index);
  }
  try {
    byPeer_[key] = s;
  } catch (...) {
    erase(s->index);
  }
}

void SecureServerEndpoint::erase(uint32_t index) noexcept {
  auto it = byIndex_.find(index);
  if (it == byIndex_.end()) return;
  std::shared_ptr<Session> s = it->second;
  byIndex_.erase(it);
  if (!s->confirmed) {
    --pending_;
    return;
  }
  auto p = byPeer_.find(peerKey(s->peer));
  if (p != byPeer_.end() && p->second == s) byPeer_.erase(p);
}

Status SecureServerEndpoint::send(std::span<const OutDatagram> batch) noexcept {
  Status result;
  // Runs of datagrams to one peer (a batch is one peer's fragments in practice).
  for (size_t from = 0; from < batch.size();) {
    size_t to = from + 1;
    while (to < batch.size() && batch[to].to == batch[from].to) ++to;
    auto run = batch.subspan(from, to - from);
    from = to;
    std::shared_ptr<Session> s;
    {
      MutexLock lock(mu_);
      auto it = byPeer_.find(peerKey(run[0].to));
      if (it != byPeer_.end()) s = it->second;
    }
    if (!s) {
      // No secure session at that address: a clear-text session's, if this server takes
      // those; otherwise nothing leaves in clear text.
      if (clearText_) {
        Status st = inner_->send(run);
        if (!st.isOk()) result = st;
      }
      continue;
    }
    MutexLock lock(s->sendMu);
    Status st = sealAndSend(s->channel, run, *inner_, s->sealed, s->out, Clock::now());
    if (!st.isOk()) result = st;
  }
  return result;
}

std::optional<secure::PublicKey> SecureServerEndpoint::clientKeyOf(NetAddress peer) const {
  MutexLock lock(mu_);
  auto it = byPeer_.find(peerKey(peer));
  if (it == byPeer_.end()) return std::nullopt;
  return it->second->client;
}

}  // namespace lrpc::net
