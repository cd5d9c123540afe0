// A UDP channel's calls: starting them (synchronous or asynchronous), sending requests and
// acknowledgements, one caller at a time leading the receive, and finishing them.
#include "transport/client.h"

#include <algorithm>
#include <cstring>

#include "runtime/capability.h"
#include "runtime/names.h"
#include "runtime/base/log.h"
#include "runtime/transfer.h"
#include "transport/callback_host.h"
#include "transport/client_parts.h"
#include "transport/random.h"
#include "transport/secure/messages.h"
#include "transport/secure_client_endpoint.h"
#include "transport/server.h"

namespace lrpc::net {

UdpChannel::Stats UdpChannel::stats() const {
  MutexLock lock(mu_);
  return stats_;
}

Status UdpChannel::call(const InterfaceDescriptor& iface, uint32_t procedure, const OutMessage& request,
                        MessageBuffer& reply, const CallOptions& options) noexcept {
  (void)iface;
  Pending p;
  p.reply = &reply;
  return afterCall(p, run(procedure, p, request, options));
}

Status UdpChannel::callApart(const InterfaceDescriptor& iface, uint32_t procedure, const OutMessage& request,
                             MessageBuffer& reply, size_t fixedBytes, std::vector<uint8_t>& tail, bool* apart,
                             const CallOptions& options) noexcept {
  (void)iface;
  *apart = false;
  Pending p;
  p.reply = &reply;
  p.tail = &tail;
  p.tailFrom = fixedBytes;
  p.apart = apart;
  return afterCall(p, run(procedure, p, request, options));
}

void UdpChannel::releaseHosted(std::span<const uint32_t> ids) noexcept {
  if (ids.empty()) return;
  std::shared_ptr<CapTable> table;
  {
    MutexLock lock(callbacksMu_);
    if (!callbackHost_) return;  // the host has gone, and its objects with it
    table = callbackHost_->sharedTable();
  }
  // An id that names no live object is a confused server's: ignored, as the host ignores such
  // a release sent on its own.
  for (uint32_t id : ids) (void)table->release(id);
}

Status UdpChannel::afterCall(Pending& p, Status s) noexcept {
  releaseHosted({p.releases, p.releaseCount});
  if (s.code() != Errc::kPeerDied) return s;
  {
    MutexLock lock(mu_);
    if (dead_.isOk()) return s;
  }
  // The server is gone, and with it every reference to the objects we passed it.
  std::shared_ptr<NetCallbackHost> host;
  {
    MutexLock lock(callbacksMu_);
    host = std::move(callbackHost_);
  }
  setAsideHost(nullptr);
  return s;  // `host` goes here, outside both locks: an object's destructor may call us
}

Status UdpChannel::run(uint32_t procedure, Pending& p, const OutMessage& request, const CallOptions& options) noexcept {
  if (Status s = begin(procedure, p, request, options); !s.isOk()) return s;
  // Wait for the reply: poll the endpoint ourselves when nobody else does.
  MutexLock lock(mu_);
  if (!held_.empty()) sendHeldLocked();  // this thread's asynchronous calls go before we wait
  while (!p.done) {
    if (!leadIfFree(p, std::chrono::milliseconds(20))) cv_.waitFor(mu_, std::chrono::milliseconds(5));
  }
  slots_[p.seq % window_] = nullptr;
  --occupied_;
  cv_.notifyAll();
  return std::move(p.status);
}

Status UdpChannel::begin(uint32_t procedure, Pending& p, const OutMessage& request, const CallOptions& options) noexcept {
  if (procedure > UINT16_MAX) return Status(Errc::kInvalidArgument, "procedure index too large");
  if (request.size() > UINT32_MAX) return Status(Errc::kInvalidArgument, "request larger than 4 GiB");
  p.procedure = static_cast<uint16_t>(procedure);
  p.request = request;
  const auto timeout = std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(options.timeout.count()));
  // A call on a capability names an object of the session it came in: taken before the wait
  // below, in which this thread may run callbacks that make calls of their own.
  const std::optional<uint32_t> capSession = lrpc::detail::takeExpectedSession(this);
  {
    MutexLock lock(mu_);
    // The window: seq s may go out only when s - window has finished, so its slot is free.
    // Callers beyond the window wait here (U-Net AM holds the sender back the same way).
    // A lost session is replaced once the calls that were on it have all returned.
    for (;;) {
      if (!dead_.isOk()) return dead_;
      // Silent for most of the server's sessionTimeout: it may have ended the session, and a
      // request on an ended session fails (it could have run). Nothing is on it: start anew.
      if (!lost_ && occupied_ == 0 && silentTooLong(lrpc::detail::coarseMonotonicNs())) loseSession();
      if (lost_ && occupied_ == 0) {
        if (Status s = rehandshake(); !s.isOk()) return s;
        continue;
      }
      if (!lost_ && slots_[nextSeq_ % window_] == nullptr) break;
      if (!held_.empty()) sendHeldLocked();  // the window is full: what it holds goes now
      if (timeout.count() > 0 && p.deadline == Clock::time_point::max()) p.deadline = Clock::now() + timeout;
      // Polls when nobody does: the calls holding the window may all be this thread's
      // asynchronous ones, which complete only when someone polls.
      if (!leadIfFree(p, std::chrono::milliseconds(5))) cv_.waitFor(mu_, std::chrono::milliseconds(50));
      if (Clock::now() >= p.deadline) {
        return Status(Errc::kDeadlineExceeded, "call window full until the deadline");
      }
    }
    // The session may have been lost and replaced while the call waited: then its id would
    // name whatever the new session gave out under it.
    if (capSession && *capSession != sessionsEnded_.load(std::memory_order_relaxed)) {
      return lrpc::detail::capSessionEnded();
    }
    // Wraps modulo 2^32 (the server compares sequence numbers the same way).
    p.seq = nextSeq_++;
    slots_[p.seq % window_] = &p;
    ++live_;
    ++occupied_;
    ++stats_.calls;
    // A request that borrows (RemoteCall::kBorrowBytes or more) never fits one datagram.
    p.fragmented = request.size() > fragmentBytes_ || request.borrows();
    if (p.fragmented) p.sender.reset(request, fragmentBytes_, options_.fragmentWindow);
    p.rto = std::chrono::duration_cast<Clock::duration>(options_.initialRto);
    // The clock is read once the request is out, not before: the timers run only under mu_,
    // which we hold, and a small call then reaches the wire one clock read sooner. A deadline
    // starts counting there (unless the window was full: then when the call began to wait).
    // An asynchronous call's request waits for the thread's SendBatch, if it has one, to leave
    // with the others in one system call.
    if (!(p.detached && !p.fragmented && holdForBatch(p))) sendRequest(p, false);
    auto now = Clock::now();
    // Relaxed: a hint for the keepalive thread (and steady_clock is CLOCK_MONOTONIC, as the
    // coarse clock it is compared with).
    sentNs_.store(std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count(),
                  std::memory_order_relaxed);
    if (timeout.count() > 0 && p.deadline == Clock::time_point::max()) p.deadline = now + timeout;
    p.nextRetransmit = now + p.rto;
  }
  return {};
}

// An asynchronous call: its Pending lives here instead of on a caller's stack.
class UdpChannel::Started final : public ChannelCall {
 public:
  explicit Started(UdpChannel& channel) noexcept : channel_(channel) {}
  ~Started() override { cancel(); }
  std::optional<Status> await(int64_t untilNs) noexcept override {
    if (over_) return std::nullopt;
    std::optional<Status> s = channel_.progress(p, untilNs);
    over_ = s.has_value();
    return s;
  }
  void cancel() noexcept override {
    if (over_) return;
    over_ = true;
    channel_.abandon(p);
    // A reply another caller read meanwhile may have brought releases; abandon() took the lock
    // they were written under.
    channel_.releaseHosted({p.releases, p.releaseCount});
  }

  Pending p;

 private:
  UdpChannel& channel_;
  bool over_ = false;  // finished and its slot let go
};

Result<std::unique_ptr<ChannelCall>> UdpChannel::startAsync(const InterfaceDescriptor& iface, uint32_t procedure,
                                                            const OutMessage& request, MessageBuffer& reply,
                                                            const CallOptions& options, lrpc::detail::Reclaim reclaim) noexcept {
  (void)iface;
  (void)reclaim;  // no A-stacks: a full window is waited for by polling (begin)
  std::unique_ptr<Started> started(new (std::nothrow) Started(*this));
  if (!started) return Status(Errc::kResourceExhausted, "out of memory for an asynchronous call");
  started->p.reply = &reply;
  started->p.detached = true;
  if (Status s = begin(procedure, started->p, request, options); !s.isOk()) {
    started->cancel();  // never in a slot: nothing to let go
    return s;
  }
  return std::unique_ptr<ChannelCall>(std::move(started));
}

std::optional<Status> UdpChannel::progress(Pending& p, int64_t untilNs) noexcept {
  MutexLock lock(mu_);
  if (!held_.empty()) sendHeldLocked();  // a caller never waits for a request still held
  for (bool looked = false;;) {
    if (p.done) {  // its slot went when it finished
      Status s = std::move(p.status);
      lock.unlock();
      releaseHosted({p.releases, p.releaseCount});
      return s;
    }
    if (looked) return std::nullopt;
    // untilNs is CLOCK_MONOTONIC (lrpc's monotonicNs), which steady_clock reads on Linux.
    const auto now = Clock::now();
    const int64_t nowNs = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
    looked = untilNs == 0 || nowNs >= untilNs;  // one more look, then give back
    const auto left = std::chrono::nanoseconds(looked ? 0 : untilNs - nowNs);
    if (!leadIfFree(p, left) && !looked) {
      cv_.waitFor(mu_, std::min<std::chrono::nanoseconds>(left, std::chrono::milliseconds(5)));
    }
  }
}

void UdpChannel::abandon(Pending& p) noexcept {
  MutexLock lock(mu_);
  if (p.done || slots_[p.seq % window_] != &p) return;  // finished, or never sent
  // A reply that still comes finds no call with its sequence number: dropped (and, if it is
  // a fragmented one, told to stop).
  finish(p, Status(Errc::kCancelled, "the caller cancelled the call"));
  sendCancel(p.seq);
  owe(p.seq);
}

void UdpChannel::owe(uint32_t seq) noexcept {
  // A handler may have dropped our objects before the cancel reached it: their releases then
  // come on a reply that no caller waits for. A few such calls are remembered.
  if (owed_.size() == kOwedCalls) owed_.erase(owed_.begin());
  try {
    owed_.push_back(seq);
  } catch (const std::bad_alloc&) {
    // Not remembered: its releases, if its reply brings any, wait for the session's end.
  }
}

void UdpChannel::sendCancel(uint32_t seq) noexcept {
  // Once, not retransmitted: only a hint for the handler (callCancelled()).
  PacketHeader h = makeHeader(PacketType::kCancel, session_, cookie_, seq);
  OutDatagram d{server_, {{&h, sizeof h}}, 1};
  (void)endpoint_->send({&d, 1});
}

bool UdpChannel::leadIfFree(Pending& self, std::chrono::nanoseconds maxWait) {
  if (!pollMu_.tryLock()) return false;
  mu_.unlock();
  std::vector<uint32_t> owed;
  // Held until the callbacks have run: a callback may drop the channel's own reference.
  std::shared_ptr<NetCallbackHost> host = asideHost();
  const bool hostGot = lead(self, maxWait, owed, host.get());
  pollMu_.unlock();
  releaseHosted(owed);  // no lock held: an object's destructor may call us
  if (hostGot) host->server().runArrived();
  host.reset();  // the last reference, if the channel let go of the host meanwhile
  mu_.lock();
  // Leadership is free: wake a waiting caller so that someone keeps polling.
  cv_.notifyAll();
  return true;
}

bool UdpChannel::lead(Pending& self, std::chrono::nanoseconds maxWait, std::vector<uint32_t>& owed,
                      NetCallbackHost* host) {
  Sink sink(*this);
  Clock::time_point wake;
  {
    MutexLock lock(mu_);
    if (self.done) return false;
    wake = self.deadline;
    for (Pending* q : slots_) {
      if (q != nullptr && !q->done) wake = std::min({wake, q->nextRetransmit, q->deadline});
    }
  }
  auto now = Clock::now();
  // Bounded so that calls started by other threads meanwhile get their timers run.
  auto timeout = std::clamp<Clock::duration>(wake - now, Clock::duration::zero(),
                                             std::chrono::duration_cast<Clock::duration>(maxWait));
  bool hostGot = false;
  auto got = host != nullptr && options_.mode != ReceiveMode::kBlocking
                 ? receiveBeside(sink, *host, timeout, hostGot)
                 : endpoint_->receive(sink, options_.mode, timeout);
  MutexLock lock(mu_);
  if (!got) {
    if (got.status().code() == Errc::kPeerDied) {
      die(Status(Errc::kPeerDied, "server " + server_.toString() + " unreachable (port closed)"));
    } else {
      failAll(got.status());
    }
    return hostGot;
  }
  // With every call finished (the common case: ours just was), there is no timer to run and
  // no clock to read on the way back to the caller.
  if (live_ > 0) onTimers(Clock::now());
  if (!releasesOwed_.empty()) owed.swap(releasesOwed_);
  return hostGot;
}

Result<size_t> UdpChannel::receiveBeside(DatagramSink& sink, NetCallbackHost& host, std::chrono::nanoseconds timeout,
                                         bool& hostGot) noexcept {
  // The server calls our objects while it runs our call, and their requests come to the
  // host's socket. The host's thread sleeps there, and the kernel wakes it onto a core
  // where this thread spins, which the scheduler gives up only when this one yields or
  // sleeps (tens of microseconds): so the spinning thread reads both sockets and runs the
  // callbacks itself (leadIfFree), as a same-host caller does (LocalBinding::waitReturnAsGuest).
  const auto start = Clock::now();
  const auto deadline = start + timeout;
  const auto spinUntil = spinEnd(options_.mode, start, timeout, options_.spinBeforeBlock);
  Backoff backoff;
  UdpServer& server = host.server();
  for (auto now = start;;) {
    server.readingAside(now);
    auto got = endpoint_->receive(sink, ReceiveMode::kBusyPoll, std::chrono::nanoseconds(0));
    if (!got || *got > 0) return got;
    if (server.takeArrived()) {
      hostGot = true;
      return size_t{0};
    }
    now = Clock::now();
    if (now >= deadline) return size_t{0};
    if (now >= spinUntil) {
      server.readingAside(std::nullopt);  // the host's thread serves what comes while we sleep
      return endpoint_->receive(sink, ReceiveMode::kBlocking, deadline - now);
    }
    backoff.pause(now);
  }
}

std::shared_ptr<NetCallbackHost> UdpChannel::asideHost() noexcept {
  if (!hasAsideHost_.load(std::memory_order_relaxed)) return nullptr;
  MutexLock lock(asideMu_);
  return asideHost_;
}

void UdpChannel::setAsideHost(std::shared_ptr<NetCallbackHost> host) noexcept {
  if (host && !host->server().receivesAside()) host.reset();
  {
    MutexLock lock(asideMu_);
    // Relaxed: a hint; the pointer itself is read under asideMu_.
    hasAsideHost_.store(host != nullptr, std::memory_order_relaxed);
    asideHost_.swap(host);
  }
  // The host that was there goes here, outside the lock, if this held its last reference.
}

void UdpChannel::lend(MessageBuffer& buffer, size_t bytes) noexcept { shelf_.lend(buffer, bytes); }

void UdpChannel::recycle(MessageBuffer& buffer) noexcept { shelf_.put(buffer); }

void UdpChannel::finish(Pending& p, Status s) noexcept {
  if (p.done) return;
  p.done = true;
  --live_;
  p.status = std::move(s);
  p.reassembly.clear();
  if (p.detached) {
    slots_[p.seq % window_] = nullptr;
    --occupied_;
  }
  cv_.notifyAll();
}

void UdpChannel::failAll(const Status& s) noexcept {
  for (Pending* q : slots_) {
    if (q != nullptr) finish(*q, s);
  }
}

void UdpChannel::die(Status s) noexcept {
  // Later calls fail at once with the same words, instead of each waiting out its retries.
  if (dead_.isOk()) dead_ = std::move(s);
  failAll(dead_);
}

PacketHeader UdpChannel::requestHeader(const Pending& p) const noexcept {
  PacketHeader h = makeHeader(PacketType::kRequest, session_, cookie_, p.seq);
  h.procedure = p.procedure;
  h.total = static_cast<uint32_t>(p.request.size());
  if (!p.fragmented && kHeaderBytes + p.request.size() <= kCellBytes) h.flags |= kFlagSingleCell;
  return h;
}

bool UdpChannel::holdForBatch(const Pending& p) noexcept {
  SendBatch* batch = SendBatch::current();
  if (batch == nullptr) return false;
  std::weak_ptr<UdpChannel> self = weak_from_this();
  if (self.expired() || !batch->hold(std::move(self))) return false;
  try {
    held_.push_back(p.seq);
  } catch (const std::bad_alloc&) {
    return false;
  }
  return true;
}

void UdpChannel::sendHeld() noexcept {
  MutexLock lock(mu_);
  sendHeldLocked();
}

void UdpChannel::sendHeldLocked() noexcept {
  constexpr size_t kChunk = 32;  // datagrams per endpoint send
  PacketHeader headers[kChunk];
  OutDatagram out[kChunk];
  size_t n = 0;
  auto send = [&]() LRPC_REQUIRES(mu_) {
    if (n == 0) return;
    ++stats_.requestSends;
    Status s = endpoint_->send({out, n});
    if (s.code() == Errc::kPeerDied) die(Status(Errc::kPeerDied, {"server ", server_.text(), " unreachable"}));
    n = 0;
  };
  for (uint32_t seq : held_) {
    Pending* q = slots_[seq % window_];
    if (q == nullptr || q->seq != seq || q->done) continue;  // cancelled, failed or answered meanwhile
    headers[n] = requestHeader(*q);
    std::span<const std::byte> body = q->request.plain();  // single-datagram requests only (begin)
    out[n] = OutDatagram{server_, {{&headers[n], sizeof headers[n]}, {const_cast<std::byte*>(body.data()), body.size()}}, 2};
    if (++n == kChunk) send();
  }
  send();
  held_.clear();
}

void UdpChannel::sendRequest(Pending& p, bool resend) noexcept {
  PacketHeader h = requestHeader(p);
  if (!resend) ++stats_.requestSends;
  if (!p.fragmented) {
    std::span<const std::byte> body = p.request.plain();  // it borrows nothing (call())
    OutDatagram d{server_, {{&h, sizeof h}, {const_cast<std::byte*>(body.data()), body.size()}}, 2};
    Status s = endpoint_->send({&d, 1});
    if (s.code() == Errc::kPeerDied) die(Status(Errc::kPeerDied, {"server ", server_.text(), " unreachable"}));
    return;
  }
  h.flags |= kFlagFragment;
  scratch_.clear();
  if (resend) p.sender.takeMissing(scratch_);
  p.sender.takeNew(scratch_);
  (void)batch_.send(*endpoint_, server_, h, scratch_, p.sender);
}

void UdpChannel::sendAck(uint32_t seq, const AckBody& ack, bool resend) noexcept {
  PacketHeader h = makeHeader(PacketType::kAck, session_, cookie_, seq);
  h.flags = kFlagAckOfReply | (resend ? kFlagResend : 0);
  h.total = sizeof ack;
  OutDatagram d{server_, {{&h, sizeof h}, {const_cast<AckBody*>(&ack), sizeof ack}}, 2};
  (void)endpoint_->send({&d, 1});
}

}  // namespace lrpc::net
