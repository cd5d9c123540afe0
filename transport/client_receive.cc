// What reaches a UDP channel: datagrams (replies, fragments, acknowledgements, "still running"
// notices) and the timers that retransmit, give up, or find the server gone.
#include "transport/client.h"

#include <algorithm>
#include <cstring>

#include "runtime/base/bulk_copy.h"
#include "runtime/capability.h"
#include "runtime/names.h"
#include "runtime/base/log.h"
#include "transport/callback_host.h"
#include "transport/client_parts.h"
#include "transport/random.h"
#include "transport/secure/messages.h"
#include "transport/secure_client_endpoint.h"

namespace lrpc::net {

void UdpChannel::onTimers(Clock::time_point now) noexcept {
  for (Pending* q : slots_) {
    if (q == nullptr || q->done) continue;
    Pending& p = *q;
    if (now >= p.deadline) {
      finish(p, Status(Errc::kDeadlineExceeded, "no reply before the call's deadline"));
      sendCancel(p.seq);
      owe(p.seq);
      continue;
    }
    if (p.heard) {
      // The peer is alive and the message moving: the timer restarts from its first timeout.
      // Set here, once per poll, rather than per datagram: a clock read for each of the ~700
      // fragments of a 1 MiB reply was 8% of the client's time.
      p.heard = false;
      p.retries = 0;
      p.rto = std::chrono::duration_cast<Clock::duration>(options_.initialRto);
      p.nextRetransmit = now + p.rto;
      continue;
    }
    if (now < p.nextRetransmit) continue;
    if (++p.retries > options_.maxRetries) {
      // A silent server: this channel's other calls and all later ones fail too.
      die(Status(Errc::kPeerDied, {"no answer from ", server_.text(), " after ",
                                   lrpc::detail::Decimal(options_.maxRetries), " retransmissions"}));
      return;
    }
    ++stats_.retransmits;
    p.rto = std::min<Clock::duration>(p.rto * 2, options_.maxRto);
    p.nextRetransmit = now + p.rto;
    if (!p.fragmented || !p.requestAcked) {
      sendRequest(p, true);
    } else {
      // The server has the whole request: ask for what is missing of the reply.
      AckBody ack{};
      if (p.reassembly.active()) ack = p.reassembly.ack();
      sendAck(p.seq, ack, true);
    }
  }
}

void UdpChannel::onDatagram(const Datagram& d) noexcept {
  auto decoded = decodePacket(d.bytes);
  if (!decoded || !(d.from == server_)) {
    ++stats_.dropped;
    return;
  }
  const Packet& pk = *decoded;
  const PacketHeader& h = pk.header;
  // Stale (an earlier session) or spoofed packets carry the wrong cookie: dropped.
  if (h.session != session_ || h.cookie != cookie_) {
    ++stats_.dropped;
    return;
  }
  if (pk.type() == PacketType::kReset) {
    // The server does not know the session (restarted, or evicted it). The calls on it may
    // have run there before: they fail. Calls made from now on go out on a new session.
    if (!lost_) {
      loseSession();
      failAll(Status(Errc::kPeerDied,
                     {"server ", server_.text(), " lost the session (restarted?); the call may have run"}));
    }
    return;
  }
  Pending* q = slots_[h.seq % window_];
  Pending* p = (q != nullptr && q->seq == h.seq && !q->done) ? q : nullptr;
  if (pk.type() == PacketType::kRunning) {
    // The whole request is there and its handler runs: the server is alive. The retry count
    // starts over, the backoff goes on, so a long call is asked after about every maxRto.
    ++stats_.running;
    if (p != nullptr) {
      p->requestAcked = true;
      p->retries = 0;
    }
    return;
  }
  if (pk.type() == PacketType::kAck && (h.flags & kFlagAckOfReply) == 0) {
    if (p == nullptr || !p->fragmented) {
      ++stats_.dropped;
      return;
    }
    auto ack = decodeAck(pk.payload);
    if (!ack) return;
    if (p->sender.onAck(*ack)) p->heard = true;
    if (p->sender.complete() || ack->complete) p->requestAcked = true;
    if (!p->requestAcked) {
      // New fragments the window now admits, plus holes the ack reveals.
      PacketHeader rh = makeHeader(PacketType::kRequest, session_, cookie_, p->seq);
      rh.procedure = p->procedure;
      rh.total = static_cast<uint32_t>(p->request.size());
      rh.flags = kFlagFragment;
      scratch_.clear();
      p->sender.takeHoles(scratch_);
      p->sender.takeNew(scratch_);
      (void)batch_.send(*endpoint_, server_, rh, scratch_, p->sender);
    }
    return;
  }
  if (pk.type() != PacketType::kReply) {
    ++stats_.dropped;
    return;
  }
  if (p == nullptr) {
    if ((h.flags & kFlagReleases) != 0) collectOwed(h.seq, pk.payload);
    // A reply for a call that already finished (a duplicate, or fragments still in flight
    // after completion): tell the server to stop sending it.
    if ((h.flags & kFlagFragment) != 0) {
      AckBody done{};
      done.complete = 1;
      sendAck(h.seq, done);
    }
    ++stats_.dropped;
    return;
  }
  if (h.procedure != p->procedure) {
    ++stats_.dropped;
    return;
  }
  p->requestAcked = true;  // a reply implies the whole request arrived
  if ((h.flags & kFlagFragment) == 0) {
    if (h.status != 0) {
      finish(*p, Status(errcFromWire(h.status), lrpc::detail::wireDetail(pk.payload.data(), pk.payload.size())));
      return;
    }
    std::span<const std::byte> results = pk.payload;
    if ((h.flags & kFlagReleases) != 0) {
      auto split = splitReleases(pk.payload, p->releases, &p->releaseCount);
      if (!split) {
        finish(*p, split.status());
        return;
      }
      results = *split;
      stats_.releasesCarried += p->releaseCount;
    }
    if (Status s = p->reply->resize(results.size()); !s.isOk()) {
      finish(*p, std::move(s));
      return;
    }
    lrpc::detail::bulkCopy(p->reply->data(), results.data(), results.size());
    finish(*p, Status());
    return;
  }
  // A fragment of a large reply: reassembled in place, in the caller's reply buffer.
  if (!p->reassembly.active()) {
    if (h.total > options_.maxMessageBytes) {
      finish(*p, Status(Errc::kResourceExhausted, "reply larger than maxMessageBytes"));
      return;
    }
    std::span<std::byte> apart;
    if (p->tail != nullptr && h.status == 0 && h.total >= p->tailFrom + kApartBytes) {
      // The tail is the caller's Data value (callApart): reassembled straight into the vector
      // that becomes it, instead of here and then copied (a pass over a megabyte reply).
      try {
        // The caller's own vector (lrpc::Into) may hold a value already: its size kept costs
        // nothing, its old bytes are never worth copying into a larger allocation.
        if (p->tail->capacity() < h.total - p->tailFrom) p->tail->clear();
        p->tail->resize(h.total - p->tailFrom);
      } catch (...) {
        finish(*p, Status(Errc::kResourceExhausted, "reply tail allocation failed"));
        return;
      }
      apart = std::as_writable_bytes(std::span<uint8_t>(*p->tail));
      *p->apart = true;
    } else if (h.total > p->reply->capacity()) {
      lend(*p->reply, h.total);  // a kept buffer, if large enough
    }
    if (Status s = p->reassembly.begin(h.total, fragmentBytes_, *p->reply, ackEvery(options_.fragmentWindow), apart);
        !s.isOk()) {
      finish(*p, std::move(s));
      return;
    }
    p->replyStatus = h.status;
  }
  auto acc = p->reassembly.accept(h, pk.payload);
  if (!acc) {
    ++stats_.dropped;
    return;
  }
  if (*acc == Reassembly::Accept::kNew) p->heard = true;
  if (p->reassembly.complete()) {
    AckBody ack = p->reassembly.ack();
    sendAck(p->seq, ack);
    if (p->replyStatus != 0) {
      finish(*p, Status(errcFromWire(p->replyStatus), lrpc::detail::wireDetail(p->reply->data(), p->reply->size())));
    } else {
      finish(*p, Status());
    }
    return;
  }
  if (p->reassembly.ackDue()) {
    sendAck(p->seq, p->reassembly.ack());
    p->reassembly.acked();
  }
}

void UdpChannel::collectOwed(uint32_t seq, std::span<const std::byte> payload) noexcept {
  auto it = std::find(owed_.begin(), owed_.end(), seq);
  if (it == owed_.end()) return;  // a duplicate of a reply already read: its releases were made
  owed_.erase(it);
  uint32_t ids[kMaxReplyReleases];
  uint32_t count = 0;
  if (!splitReleases(payload, ids, &count)) return;
  stats_.releasesCarried += count;
  try {
    releasesOwed_.insert(releasesOwed_.end(), ids, ids + count);
  } catch (const std::bad_alloc&) {
    // Left to the session's end, when the host drops every object.
  }
}

}  // namespace lrpc::net
