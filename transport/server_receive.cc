// What reaches a UDP server: hellos (the handshake, and a session table that a flood cannot
// take over), requests (at most once per sequence number, run by the worker pool, "still
// running" while they run), acknowledgements, and the replies it sends and resends.
#include "transport/server.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "runtime/base/bulk_copy.h"
#include "runtime/cap_table.h"
#include "runtime/callbacks.h"
#include "runtime/names.h"
#include "runtime/base/log.h"
#include "runtime/transfer.h"
#include "transport/callback_host.h"
#include "transport/random.h"
#include "transport/secure/messages.h"
#include "transport/secure_server_endpoint.h"

namespace lrpc::net {

namespace {

// Drops a slot's kept result value, its storage to `shelf` for the next lrpc::resultBuffer().
void shelveKept(ResultShelf& shelf, std::unique_ptr<KeptResult>& kept) noexcept {
  if (!kept) return;
  std::vector<uint8_t> storage = kept->takeStorage();
  shelf.put(storage);
  kept.reset();
}

// A request buffer larger than this is not kept in its slot after the call (one spare at most).
constexpr size_t kKeepRequestBytes = 64u << 10;

// Sequence numbers wrap: a is older than b when it lies less than 2^31 behind it.
bool olderThan(uint32_t a, uint32_t b) noexcept { return static_cast<int32_t>(a - b) < 0; }

std::string describe(const char* name, uint64_t id, uint64_t hash) {
  char buf[400];
  std::snprintf(buf, sizeof buf, "%s (id 0x%016" PRIx64 ", signature 0x%016" PRIx64 ")", name, id, hash);
  return buf;
}
}  // namespace

void UdpServer::sendHeaderOnly(NetAddress to, PacketHeader h, std::span<const std::byte> payload) noexcept {
  h.total = static_cast<uint32_t>(payload.size());
  OutDatagram d{to, {{&h, sizeof h}, {const_cast<std::byte*>(payload.data()), payload.size()}}, 2};
  (void)endpoint_->send({&d, 1});
}

void UdpServer::onDatagram(const Datagram& d) noexcept {
  auto decoded = decodePacket(d.bytes);
  if (!decoded) return;  // garbage: dropped without a word
  const Packet& p = *decoded;
  if (p.type() == PacketType::kHello) {
    onHello(d, p);
    return;
  }
  auto it = sessions_.find(p.header.session);
  if (it == sessions_.end()) {
    // Unknown session (we restarted, or evicted it): tell the client so it fails fast
    // instead of retrying into silence. Echoes its cookie, so only that client accepts it.
    if (p.type() == PacketType::kRequest || p.type() == PacketType::kAck) {
      PacketHeader h = makeHeader(PacketType::kReset, p.header.session, p.header.cookie, p.header.seq);
      sendHeaderOnly(d.from, h, {});
    }
    return;
  }
  Session& s = it->second;
  // Stale or spoofed: wrong cookie or another source address.
  if (p.header.cookie != s.cookie || !(d.from == s.peer)) return;
  if (p.type() == PacketType::kBye) {
    eraseSession(it);
    return;
  }
  if (p.type() == PacketType::kCancel) {
    if (!s.slots) return;
    Slot& slot = s.slots[p.header.seq % s.window];
    // Relaxed: a hint the handler reads; its slot stays kRunning until the handler is done.
    if (slot.state == SlotState::kRunning && slot.seq == p.header.seq) {
      slot.cancelled.store(mu_, true, std::memory_order_relaxed);
    }
    return;
  }
  if (p.type() != PacketType::kRequest && p.type() != PacketType::kAck) return;
  if (!s.established) {
    // The peer echoed the cookie of our welcome, so it receives at its address: the session
    // now gets its reply cache and counts among the established ones, which new half-open
    // sessions never push out.
    std::shared_ptr<Slot[]> slots(new (std::nothrow) Slot[s.window]);
    if (!slots) return;  // no memory now: the client retransmits
    std::shared_ptr<CapTable> caps = sharedCaps_;
    std::shared_ptr<PeerCallbacks> callbacks;
    try {
      if (!caps) caps = std::make_shared<CapTable>(options_.maxCapabilities);
      callbacks = std::make_shared<PeerCallbacks>();
      callbacks->peer = s.peer;
    } catch (const std::bad_alloc&) {
      return;
    }
    if (sessions_.size() - halfOpen_ >= options_.maxSessions) evictOldestEstablished();
    s.slots = std::move(slots);
    s.caps = std::move(caps);
    s.callbacks = std::move(callbacks);
    s.established = true;
    --halfOpen_;
    halfOpenCount_.store(halfOpen_, std::memory_order_relaxed);
  }
  s.lastActive = ++tick_;
  s.heardNs = lrpc::detail::coarseMonotonicNs();
  if (p.type() == PacketType::kRequest) {
    onRequest(s, p);
  } else if ((p.header.flags & kFlagAckOfReply) != 0) {
    onAck(s, p);
  }
}

void UdpServer::onHello(const Datagram& d, const Packet& p) noexcept {
  PacketHeader reply = makeHeader(PacketType::kWelcome, 0, p.header.cookie, 0);
  auto hello = decodeHello(p.payload);
  if (!hello) return;
  if (auto known = byNonce_.find(p.header.cookie); known != byNonce_.end()) {
    // A retransmitted hello: answer with the session already made for it.
    auto it = sessions_.find(known->second);
    if (it != sessions_.end() && it->second.peer == d.from) {
      Session& s = it->second;
      reply.session = s.id;
      WelcomeBody w{s.cookie, s.window, static_cast<uint32_t>(options_.maxDatagram), s.service->iface->procedureCount,
                    static_cast<uint32_t>(options_.sessionTimeout.count())};
      sendHeaderOnly(d.from, reply, {reinterpret_cast<const std::byte*>(&w), sizeof w});
    }
    return;
  }
  auto refuse = [&](Errc code, const std::string& why) {
    reply.status = static_cast<uint8_t>(code);
    std::string text = why.substr(0, kMaxWireDetail);
    sendHeaderOnly(d.from, reply, {reinterpret_cast<const std::byte*>(text.data()), text.size()});
  };
  // The same rules and words as the same-host path (runtime/names.h, runtime/import.cc).
  if (Status bad = lrpc::detail::checkName(hello->name); !bad.isOk()) {
    refuse(bad.code(), bad.detail());
    return;
  }
  auto svc = services_.find(hello->name);
  if (svc == services_.end()) {
    refuse(Errc::kNotFound, "no server exports \"" + std::string(hello->name) + "\"");
    return;
  }
  const InterfaceDescriptor& iface = *svc->second.iface;
  if (iface.id != hello->body.ifaceId || iface.signatureHash != hello->body.signatureHash) {
    std::string client(hello->ifaceName);
    refuse(Errc::kBindingRejected,
           "interface mismatch: client has " + describe(client.c_str(), hello->body.ifaceId, hello->body.signatureHash) +
               ", server exports " + describe(iface.name ? iface.name : "?", iface.id, iface.signatureHash));
    return;
  }
  if (hello->body.window == 0 || hello->body.maxDatagram < kMinDatagram) {
    refuse(Errc::kInvalidArgument, "window or datagram size out of range");
    return;
  }
  makeRoomForHalfOpen();
  Session s;
  s.id = nextSession_++;
  if (nextSession_ == 0) nextSession_ = 1;
  if (sessions_.count(s.id) != 0) return;  // ids wrapped onto a live one: the client retries
  s.cookie = detail::randomCookie();
  s.nonce = p.header.cookie;
  s.peer = d.from;
  s.service = &svc->second;
  s.window = std::min(hello->body.window, options_.window);
  s.fragmentBytes = fragmentPayload(std::min<size_t>(hello->body.maxDatagram, options_.maxDatagram));
  s.lastActive = ++tick_;
  s.heardNs = lrpc::detail::coarseMonotonicNs();
  reply.session = s.id;
  WelcomeBody w{s.cookie, s.window, static_cast<uint32_t>(options_.maxDatagram), iface.procedureCount,
                static_cast<uint32_t>(options_.sessionTimeout.count())};
  byNonce_[s.nonce] = s.id;
  halfOpenOrder_.push_back(s.id);
  ++halfOpen_;
  sessions_.emplace(s.id, std::move(s));
  sessionCount_.store(sessions_.size(), std::memory_order_relaxed);
  halfOpenCount_.store(halfOpen_, std::memory_order_relaxed);
  sendHeaderOnly(d.from, reply, {reinterpret_cast<const std::byte*>(&w), sizeof w});
}

void UdpServer::eraseSession(std::unordered_map<uint32_t, Session>::iterator it) noexcept {
  byNonce_.erase(it->second.nonce);
  if (!it->second.established) --halfOpen_;
  // Its objects are destroyed once mu_ is let go (Sink): their destructors may answer
  // deferred calls, which takes mu_.
  try {
    ended_.push_back(std::move(it->second.caps));
    ended_.push_back(std::move(it->second.callbacks));
  } catch (const std::bad_alloc&) {
    // Then they go with the session, here; only a Reply dropped in them could mind.
  }
  sessions_.erase(it);  // a handler still running on it keeps its slots (Job::slots)
  sessionCount_.store(sessions_.size(), std::memory_order_relaxed);
  halfOpenCount_.store(halfOpen_, std::memory_order_relaxed);
}

void UdpServer::expireSilent() noexcept {
  if (options_.sessionTimeout.count() == 0) return;
  const int64_t now = lrpc::detail::coarseMonotonicNs();
  // Relaxed: a hint between polling threads; a stale read looks one turn early or late.
  if (now < nextExpiryNs_.load(std::memory_order_relaxed)) return;
  const int64_t timeoutNs = std::chrono::duration_cast<std::chrono::nanoseconds>(options_.sessionTimeout).count();
  nextExpiryNs_.store(now + timeoutNs / 4, std::memory_order_relaxed);
  std::vector<std::shared_ptr<void>> ended;
  {
    MutexLock lock(mu_);
    endSilentSessions(now, timeoutNs);
    ended.swap(ended_);
  }
}  // the objects of the sessions that ended go here, with no lock held (as in Sink)

void UdpServer::endSilentSessions(int64_t nowNs, int64_t timeoutNs) noexcept {
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    const Session& s = it->second;
    bool running = false;
    // A client waiting for a long handler retransmits, so it is heard; a deferred call, whose
    // answer may come much later, holds its session until answered.
    for (uint32_t i = 0; s.slots && i < s.window && !running; ++i) running = s.slots[i].state == SlotState::kRunning;
    if (running || nowNs - s.heardNs < timeoutNs) {
      ++it;
      continue;
    }
    lrpc::detail::logf(LogTopic::kTransport, "udp server: session %u from %s silent for %lld ms: ended", s.id,
                       s.peer.toString().c_str(), static_cast<long long>((nowNs - s.heardNs) / 1'000'000));
    auto silent = it++;
    eraseSession(silent);
  }
}

bool UdpServer::makeRoomForHalfOpen() noexcept {
  // halfOpenOrder_ keeps ids of sessions since established or closed too; those are skipped.
  while (halfOpen_ >= options_.maxHalfOpen && !halfOpenOrder_.empty()) {
    uint32_t id = halfOpenOrder_.front();
    halfOpenOrder_.pop_front();
    auto it = sessions_.find(id);
    if (it != sessions_.end() && !it->second.established) eraseSession(it);
  }
  if (halfOpenOrder_.size() > 2 * size_t{options_.maxHalfOpen} + 64) {
    // Mostly ids of sessions no longer half-open: keep the deque as small as the table.
    std::deque<uint32_t> live;
    for (uint32_t id : halfOpenOrder_) {
      auto it = sessions_.find(id);
      if (it != sessions_.end() && !it->second.established) live.push_back(id);
    }
    halfOpenOrder_.swap(live);
  }
  return halfOpen_ < options_.maxHalfOpen;
}

void UdpServer::evictOldestEstablished() noexcept {
  auto oldest = sessions_.end();
  for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
    if (!it->second.established) continue;
    if (oldest == sessions_.end() || it->second.lastActive < oldest->second.lastActive) oldest = it;
  }
  if (oldest != sessions_.end()) eraseSession(oldest);
}

void UdpServer::onRequest(Session& s, const Packet& p) noexcept {
  const PacketHeader& h = p.header;
  Slot& slot = s.slots[h.seq % s.window];
  if (slot.state != SlotState::kEmpty && olderThan(h.seq, slot.seq)) return;  // older than the window: stale
  const bool fragment = (h.flags & kFlagFragment) != 0;
  if (slot.state != SlotState::kEmpty && h.seq == slot.seq) {
    switch (slot.state) {
      case SlotState::kDone:
        // A duplicate of an executed call: answer from the reply cache, never run it again.
        // (The client resends only on its timeout, so this is a timeout: resend missing.)
        sendReply(s, slot, Resend::kMissing);
        return;
      case SlotState::kRunning:
        // A retransmission while the handler runs: not run again; the client learns the call
        // is alive, so that a long handler is not taken for a dead server.
        sendRunning(s, h.seq);
        return;
      case SlotState::kDelivered: return;
      case SlotState::kReceiving: break;  // another fragment of the request
      case SlotState::kEmpty: return;
    }
  } else {
    // A client never sends seq + window before seq finished or it gave seq up; one that does
    // (buggy or hostile) must not take the slot from a handler still using it. A deferred
    // call whose handler has returned uses it no more: its answer will go nowhere.
    if (slot.state == SlotState::kRunning) {
      // Only once the handler is done with the request (DeferRace::waiting).
      std::shared_ptr<DeferLink>& deferred = slot.deferred.get(mu_);
      if (!deferred || !deferred->race.waiting()) return;
      // Relaxed: read under mu_ (finishDeferred), or as a hint (Deferred::cancelled).
      deferred->detached.store(mu_, true, std::memory_order_relaxed);
      deferred.reset();
    }
    // A new call (seq above the slot's: the client finished the slot's previous call).
    slot.seq = h.seq;
    slot.procedure = h.procedure;
    slot.status = 0;
    // Relaxed: no handler runs on the slot now (it is not kRunning); the next one starts after
    // the job queue hands it over.
    slot.cancelled.store(mu_, false, std::memory_order_relaxed);
    slot.fragmentedReply = false;
    slot.replyFlags = 0;
    shelveKept(resultShelf_, slot.kept);  // the client has moved on: it has that reply, or gave up
    slot.reassembly.clear();
    if (!fragment) {
      spareRequest_.reset();  // back to small calls: give the large buffer back
      // Copied out of the receive buffer: the handler runs once the receive has returned.
      if (slot.request && slot.request->capacity() > kKeepRequestBytes) slot.request.reset();
      if (!slot.request) slot.request.reset(new (std::nothrow) MessageBuffer);
      if (!slot.request || !slot.request->resizeForOverwrite(p.payload.size()).isOk()) {
        slot.request.reset();
        slot.state = SlotState::kEmpty;
        slot.seq = h.seq - 1;  // no memory now: let a retransmission try again
        return;
      }
      lrpc::detail::bulkCopy(slot.request->data(), p.payload.data(), p.payload.size());
      schedule(s, slot);
      return;
    }
    if (h.total > options_.maxMessageBytes) {
      slot.state = SlotState::kDone;
      slot.status = static_cast<uint8_t>(Errc::kResourceExhausted);
      static constexpr char kText[] = "request larger than the server's maxMessageBytes";
      (void)slot.reply.resize(sizeof kText - 1);
      std::memcpy(slot.reply.data(), kText, sizeof kText - 1);
      sendReply(s, slot, Resend::kNone);
      return;
    }
    if (spareRequest_) slot.request = std::move(spareRequest_);
    if (!slot.request) slot.request.reset(new (std::nothrow) MessageBuffer);
    if (!slot.request || !slot.reassembly.begin(h.total, s.fragmentBytes, *slot.request, ackEvery(options_.fragmentWindow))
                              .isOk()) {
      slot.request.reset();
      slot.state = SlotState::kEmpty;
      slot.seq = h.seq - 1;  // let a retransmission try again
      return;
    }
    slot.state = SlotState::kReceiving;
  }
  if (!fragment || h.procedure != slot.procedure) return;
  auto acc = slot.reassembly.accept(h, p.payload);
  if (!acc) return;
  PacketHeader ackHeader = makeHeader(PacketType::kAck, s.id, s.cookie, h.seq);
  if (slot.reassembly.complete()) {
    AckBody ack = slot.reassembly.ack();
    sendHeaderOnly(s.peer, ackHeader, {reinterpret_cast<const std::byte*>(&ack), sizeof ack});
    slot.reassembly.clear();
    schedule(s, slot);
    return;
  }
  if (slot.reassembly.ackDue()) {
    AckBody ack = slot.reassembly.ack();
    sendHeaderOnly(s.peer, ackHeader, {reinterpret_cast<const std::byte*>(&ack), sizeof ack});
    slot.reassembly.acked();
  }
}

void UdpServer::schedule(Session& s, Slot& slot) noexcept {
  slot.state = SlotState::kRunning;
  try {
    jobs_.push_back(Job{s.id, s.service, s.slots, &slot, s.caps, s.callbacks, s.fragmentBytes});
  } catch (...) {
    slot.state = SlotState::kEmpty;
    slot.seq -= 1;  // no memory now: let a retransmission try again
  }
}

void UdpServer::sendRunning(Session& s, uint32_t seq) noexcept {
  sendHeaderOnly(s.peer, makeHeader(PacketType::kRunning, s.id, s.cookie, seq), {});
}

void UdpServer::finishJob(const Job& job, Status result) noexcept {
  Slot& slot = *job.slot;
  slot.deferred.get(mu_).reset();
  slot.status = 0;
  if (!result.isOk()) {
    slot.replyFlags = 0;
    slot.status = static_cast<uint8_t>(result.code());
    slot.kept.reset();  // the reply is the error text alone
    const std::string& text = result.detail();
    size_t n = std::min(text.size(), kMaxWireDetail);
    if (slot.reply.resize(n).isOk() && n > 0) std::memcpy(slot.reply.data(), text.data(), n);
  }
  slot.state = SlotState::kDone;
  // A large request's buffer serves the next large request, in whatever slot.
  if (slot.request && slot.request->capacity() > kKeepRequestBytes) spareRequest_ = std::move(slot.request);
  auto it = sessions_.find(job.session);
  if (it == sessions_.end() || it->second.slots != job.slots) return;  // closed or evicted meanwhile
  sendReply(it->second, slot, Resend::kNone);
}

void UdpServer::sendReply(Session& s, Slot& slot, Resend resend) noexcept {
  PacketHeader h = makeHeader(PacketType::kReply, s.id, s.cookie, slot.seq);
  h.procedure = slot.procedure;
  h.status = slot.status;
  h.total = static_cast<uint32_t>(slot.reply.size());
  if (slot.reply.size() <= s.fragmentBytes && !slot.kept) {  // a kept value never fits one datagram
    if (kHeaderBytes + slot.reply.size() <= kCellBytes) h.flags |= kFlagSingleCell;
    h.flags |= slot.replyFlags;
    sendHeaderOnly(s.peer, h, slot.reply.span());
    return;
  }
  h.flags |= kFlagFragment;
  if (!slot.fragmentedReply) {
    slot.fragmentedReply = true;
    const std::span<const std::byte> reply = std::as_const(slot.reply).span();
    slot.sender.reset(slot.kept ? OutMessage(reply, slot.keptAt, slot.kept->bytes()) : OutMessage(reply),
                      s.fragmentBytes, options_.fragmentWindow);
    resend = Resend::kNone;
  }
  scratch_.clear();
  if (resend == Resend::kMissing) slot.sender.takeMissing(scratch_);
  if (resend == Resend::kHoles) slot.sender.takeHoles(scratch_);
  slot.sender.takeNew(scratch_);
  (void)batch_.send(*endpoint_, s.peer, h, scratch_, slot.sender);
}

void UdpServer::onAck(Session& s, const Packet& p) noexcept {
  Slot& slot = s.slots[p.header.seq % s.window];
  if (slot.seq != p.header.seq) return;
  if (slot.state == SlotState::kRunning) {
    // The client, waiting for the reply to a request it knows arrived, asks after it.
    if ((p.header.flags & kFlagResend) != 0) sendRunning(s, p.header.seq);
    return;
  }
  if (slot.state != SlotState::kDone) return;
  auto ack = decodeAck(p.payload);
  if (!ack) return;
  if (ack->complete) {
    // The client has the whole reply: stop sending it, and give a large cached copy's memory
    // to the shelf (or back to the system) rather than keep it in this slot until reused.
    slot.state = SlotState::kDelivered;
    if (slot.reply.onHeap()) replyShelf_.put(slot.reply);
    shelveKept(resultShelf_, slot.kept);
    return;
  }
  const bool timedOut = (p.header.flags & kFlagResend) != 0;
  if (!slot.fragmentedReply) {
    if (timedOut) sendReply(s, slot, Resend::kMissing);  // the client never got the reply
    return;
  }
  (void)slot.sender.onAck(*ack);
  sendReply(s, slot, timedOut ? Resend::kMissing : Resend::kHoles);
}

}  // namespace lrpc::net
