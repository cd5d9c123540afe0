#include "runtime/local_binding.h"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <iterator>
#include <string>

#include "runtime/base/fd.h"
#include "runtime/base/mutex.h"
#include "runtime/callbacks.h"
#include "runtime/capability.h"
#include "runtime/cap_table.h"
#include "runtime/protocol.h"
#include "runtime/shm.h"
#include "runtime/stub_support.h"

namespace lrpc {

namespace detail {

void AStackPool::init(uint32_t first, uint32_t count) {
  first_ = first;
  count_ = count;
  state_ = std::make_unique<std::atomic<uint64_t>[]>(count);
  // The first A-stack returned last: a single-threaded caller always reuses the same, warm one.
  for (uint32_t i = 0; i < count; ++i) state_[i].store(count - i, std::memory_order_relaxed);
  clock_.store(count, std::memory_order_relaxed);
  top_.store(0, std::memory_order_release);
}

uint32_t AStackPool::popScan() noexcept {
  for (;;) {
    uint32_t best = kEmpty;
    uint64_t bestStamp = 0;
    for (uint32_t i = 0; i < count_; ++i) {
      uint64_t stamp = state_[i].load(std::memory_order_relaxed);
      if (stamp > bestStamp) {
        bestStamp = stamp;
        best = i;
      }
    }
    if (best == kEmpty) return kEmpty;
    if (claim(best)) return first_ + best;
    // Another thread took it between the scan and the claim: scan again.
  }
}

}  // namespace detail

namespace {
// How long a socket request may wait for the clerk's reply before the binding is called dead.
constexpr int kClerkReplyMs = 10'000;
}  // namespace

// The state only slow paths touch: the socket to the clerk and what travels on it, the
// mapping, and their locks.
struct LocalBinding::Slow {
  Slow(LocalBinding& b, Duration wait, SharedMemory r, OwnedFd s) noexcept
      : owner(b), astackWait(wait), region(std::move(r)), socket(std::move(s)) {}

  // Sends `request` and waits for the reply of type `want` for the same A-stack; replies for
  // other A-stacks that arrive meanwhile are kept in pending.
  // deadlineNs (monotonic, 0 for none) bounds the wait for the reply below the clerk's own
  // limit: then kDeadlineExceeded, and the binding stays usable (a late reply waits in pending).
  // `attach` (>= 0) is an fd sent with the request.
  Status exchangeLocked(const detail::Message& request, detail::MsgType want, detail::Message* reply, OwnedFd* fd,
                        int64_t deadlineNs = 0, int attach = -1) noexcept LRPC_REQUIRES(sockMu);

  LocalBinding& owner;
  const Duration astackWait;
  SharedMemory region;
  OwnedFd socket;

  struct Pending {
    detail::Message message;
    OwnedFd fd;
  };
  Mutex sockMu;
  std::vector<Pending> pending LRPC_GUARDED_BY(sockMu);

  struct Abandoned {
    uint32_t index;
    uint32_t seq;
    uint32_t streamEnd;  // 0, or the streamed result tail's length (abandon)
  };
  Mutex abandonedMu;
  std::vector<Abandoned> abandoned LRPC_GUARDED_BY(abandonedMu);
  std::atomic<bool> anyAbandoned{false};

  // Taken before sockMu when both are. Last members: destroyed first (see slow_).
  mutable Mutex callbacksMu;
  std::unique_ptr<detail::CallbackHost> callbacks LRPC_GUARDED_BY(callbacksMu);
  // `callbacks`, for callers without the lock (waiting, passing or finding an object): set
  // once, under the lock, and gone only with the binding.
  std::atomic<detail::CallbackHost*> guestHost{nullptr};
};

LocalBinding::LocalBinding(const InterfaceDescriptor& iface, RegionLayout layout, SharedMemory region,
                           OwnedFd socket, uint64_t key, TransferMode mode, Duration astackWait)
    : base_(region.data()),
      key_(key),
      mode_(mode),
      procedureCount_(layout.procedureCount()),
      procs_(std::make_unique<Proc[]>(layout.procedureCount())),
      slots_(std::make_unique<Slot[]>(layout.astackCount())),
      iface_(iface),
      layout_(std::move(layout)),
      slow_(std::make_unique<Slow>(*this, astackWait, std::move(region), std::move(socket))) {
  const bool cache = detail::enableProcessBarrier();
  for (uint32_t p = 0; p < procedureCount_; ++p) {
    procs_[p].layout = layout_.procedure(p);
    procs_[p].pool.init(procs_[p].layout.firstAStack, procs_[p].layout.count);
    procs_[p].cache.init(procs_[p].layout.count, cache);
  }
  for (uint32_t i = 0; i < layout_.astackCount(); ++i) slots_[i].ctl = control(i);
}

LocalBinding::~LocalBinding() = default;

int LocalBinding::socket() const noexcept { return slow_->socket.get(); }

const std::byte* LocalBinding::argSegmentBase(uint32_t index) const noexcept { return slots_[index].argSegment->data(); }

Result<uint32_t> LocalBinding::acquireSlow(uint32_t p, Duration callTimeout, detail::Reclaim reclaim) noexcept {
  bool callDeadline = callTimeout.count() > 0 && callTimeout < slow_->astackWait;
  int64_t deadline = detail::monotonicNs() + (callDeadline ? callTimeout : slow_->astackWait).count();
  for (uint32_t round = 0;; ++round) {
    // A hint only (the list itself is under abandonedMu): skip the lock when nothing waits.
    if (slow_->anyAbandoned.load(std::memory_order_acquire)) reclaimAbandoned();
    if (reclaim.fn != nullptr) reclaim.fn(reclaim.context);
    if (uint32_t index = procs_[p].takeAny(); index != detail::AStackPool::kEmpty) return index;
    if (dead()) return Status(Errc::kPeerDied, "server of this binding is gone");
    if (detail::monotonicNs() >= deadline) {
      if (callDeadline) return Status(Errc::kDeadlineExceeded, "deadline passed waiting for a free A-stack");
      return Status(Errc::kResourceExhausted,
                    {"all A-stacks of ", iface_.name, ".", iface_.procedures[p].name, " stayed in use"});
    }
    // Yield first (an A-stack usually comes back within a call's time), then sleep briefly.
    if (round < 64) {
      ::sched_yield();
    } else {
      timespec ts{0, 50'000};
      ::nanosleep(&ts, nullptr);
    }
  }
}

void LocalBinding::reclaimAbandoned() noexcept {
  // Releases the late returns carried, applied once the lock is let go: an object's destructor
  // may call through this binding again.
  uint32_t released[8];
  size_t count = 0;
  {
    MutexLock lock(slow_->abandonedMu);
    auto done = [this, &released, &count](const Slow::Abandoned& a) {
      ReturnControl* ret = returnControl(a.index);
      // Acquire: once the server returned the abandoned call, it no longer touches the A-stack.
      if (!detail::seqIs(ret->returnWord.load(std::memory_order_acquire), a.seq)) return false;
      // Acquire: once the server counts its streamed tail whole, it no longer writes it.
      if (a.streamEnd != 0 && ret->resultReady.load(std::memory_order_acquire) < a.streamEnd) return false;
      // Read before the A-stack goes back to the pool (the next call's return rewrites it). A
      // reclaim with more releases than it has room for leaves the rest for the next one.
      if (const uint32_t id = detail::loadOnce(ret->releasedId); id != 0) {
        if (count == std::size(released)) return false;
        released[count++] = id;
      }
      // Relaxed: ordered before the next call's handler reads it by the release in ring().
      ret->cancelWord.store(0, std::memory_order_relaxed);
      procs_[layout_.procedureOf(a.index)].pool.push(a.index);
      return true;
    };
    std::vector<Slow::Abandoned>& list = slow_->abandoned;
    list.erase(std::remove_if(list.begin(), list.end(), done), list.end());
    slow_->anyAbandoned.store(!list.empty(), std::memory_order_release);
  }
  for (size_t i = 0; i < count; ++i) releaseCallback(released[i]);
}

void LocalBinding::abandon(uint32_t index, uint32_t seq, uint32_t streamEnd) noexcept {
  // Relaxed: a hint the handler may read at any time; nothing is read because of it. Sequence
  // number 0 (after a wrap) is never marked: 0 means none.
  returnControl(index)->cancelWord.store(seq, std::memory_order_relaxed);
  MutexLock lock(slow_->abandonedMu);
  slow_->abandoned.push_back({index, seq, streamEnd});
  slow_->anyAbandoned.store(true, std::memory_order_release);
}

Status LocalBinding::waitReturn(uint32_t index, uint32_t seq, int64_t deadlineNs, uint32_t adaptiveSpins) noexcept {
  ReturnControl* ret = returnControl(index);
  return endWait(index, seq,
                 detail::waitForReturn(ret->returnWord, ret->clientSleeping, seq, mode_, slow_->socket.get(),
                                       deadlineNs, adaptiveSpins));
}

Status LocalBinding::endWait(uint32_t index, uint32_t seq, detail::WaitResult waited) noexcept {
  switch (waited) {
    case detail::WaitResult::kReady:
      return {};
    case detail::WaitResult::kTimedOut:
      abandon(index, seq);
      return Status(Errc::kDeadlineExceeded, "no reply before the call's deadline");
    case detail::WaitResult::kPeerDied:
    case detail::WaitResult::kStopped:     // a server's only
    case detail::WaitResult::kHelped:      // a server's only
    case detail::WaitResult::kWouldSleep:  // handled by waitReturnAsGuest
      break;
  }
  markDead();
  return Status(Errc::kPeerDied, "server process went away during the call");
}

Status LocalBinding::waitReturnAsGuest(uint32_t index, uint32_t seq, detail::LazyDeadline& deadline) noexcept {
  ReturnControl* ret = returnControl(index);
  // Acquire: pairs with exportCallback's release; the host is complete.
  detail::CallbackHost* host = slow_->guestHost.load(std::memory_order_acquire);
  if (host == nullptr || !host->enterGuest()) {
    // Relaxed: nobody runs this call's callbacks now; the server reads it after its own fence.
    ret->guestSeq.store(0, std::memory_order_relaxed);
    return waitReturn(index, seq, deadline.ns());
  }
  struct Guest {
    detail::CallbackHost* host;
    uint16_t origin;
    detail::LazyDeadline* deadline;  // fixed before a callback runs: its time counts
  } guest{host, static_cast<uint16_t>(index + 1), &deadline};
  const detail::Help runCallbacks{[](void* g) {
                                    auto* self = static_cast<Guest*>(g);
                                    return self->host->serveGuest(self->origin, self->deadline);
                                  },
                                  &guest};
  const detail::WaitResult waited = detail::waitForReturn(ret->returnWord, ret->clientSleeping, seq, mode_,
                                                          slow_->socket.get(), deadline, detail::kAdaptiveSpins,
                                                          runCallbacks);
  // No longer a guest (relaxed: published to the callback threads by the next doorbell's
  // fence at the latest).
  ret->guestSeq.store(0, std::memory_order_relaxed);
  // After the return, the last look below sees every callback of this call with no fence: the
  // server rang them before the return (the thread that ran the handler rings the return, or
  // hands it to the answering thread through deferRace's acq_rel exchange), and our acquire of
  // the return made those rings visible. A fence there would wait for this store's line, which
  // the return has just moved to the server's core: a cross-core round trip on every call.
  // Any other way out leaves while the server may still ring one: then a seq_cst fence, as the
  // server fences between ringing a callback and reading this word (ringReverse), so either it
  // sees us gone and wakes the callback thread, or we see its callback here.
  if (waited != detail::WaitResult::kReady) std::atomic_thread_fence(std::memory_order_seq_cst);
  if (waited != detail::WaitResult::kPeerDied) {
    while (runCallbacks.fn(runCallbacks.context)) {
    }
  }
  host->leaveGuest();
  if (waited == detail::WaitResult::kWouldSleep) return waitReturn(index, seq, deadline.ns(), 0);
  return endWait(index, seq, waited);
}

bool LocalBinding::guestWaits() const noexcept {
  const detail::CallOrigin* o = reverse() ? detail::CallOrigin::within(reverseOf_) : nullptr;
  // A hint: ringReverse looks again after its fence.
  return o != nullptr && o->guestWaits();
}

void LocalBinding::ringReverse(AStackControl* ctl, uint32_t seq) noexcept {
  const detail::CallOrigin* o = detail::CallOrigin::within(reverseOf_);
  detail::storeOnce(ctl->origin, o != nullptr ? o->origin : uint16_t{0});
  // The fence in announce() orders our store of seq before our loads of the guest's word and
  // the sleeping flag, as the guest clears its word before its last look (waitReturnAsGuest)
  // and the callback thread sets the flag before its re-load (sleepOn): we see them, or they
  // see the call.
  detail::announce(ctl->callWord, seq);
  // The forward call's waiting thread runs this callback.
  if (o != nullptr && o->guestWaits()) return;
  detail::wakeSleeper(ctl->callWord, ctl->serverSleeping);
}

Result<bool> LocalBinding::pollReturn(uint32_t index, uint32_t seq, int64_t untilNs, int64_t deadlineNs,
                                      uint32_t looks) noexcept {
  if (dead()) return Status(Errc::kPeerDied, "server of this binding is gone");
  const int64_t now = untilNs != 0 || deadlineNs != 0 ? detail::monotonicNs() : 0;
  if (deadlineNs != 0 && now >= deadlineNs) {
    abandon(index, seq);
    return Status(Errc::kDeadlineExceeded, "no reply before the call's deadline");
  }
  if (untilNs == 0 || now >= untilNs) {
    // A look that never waits still learns of a dead server, at a system call per many looks.
    if (looks % detail::kCheckEvery == 0 && detail::peerGone(slow_->socket.get())) {
      markDead();
      return Status(Errc::kPeerDied, "server process went away during the call");
    }
    return false;
  }
  const int64_t until = deadlineNs != 0 && deadlineNs < untilNs ? deadlineNs : untilNs;
  ReturnControl* ret = returnControl(index);
  const detail::WaitResult waited =
      detail::waitForReturn(ret->returnWord, ret->clientSleeping, seq, mode_, slow_->socket.get(), until);
  if (waited == detail::WaitResult::kReady) return true;
  // Only `untilNs` passed: the call goes on.
  if (waited == detail::WaitResult::kTimedOut && (deadlineNs == 0 || detail::monotonicNs() < deadlineNs)) return false;
  return endWait(index, seq, waited);
}

Status LocalBinding::Slow::exchangeLocked(const detail::Message& request, detail::MsgType want,
                                          detail::Message* reply, OwnedFd* fd, int64_t deadlineNs, int attach) noexcept {
  if (Status s = detail::sendMessage(socket.get(), &request, sizeof request, attach); !s.isOk()) {
    if (s.code() == Errc::kPeerDied) owner.markDead();
    return s;
  }
  for (;;) {
    for (auto it = pending.begin(); it != pending.end(); ++it) {
      if (it->message.type == want && it->message.astack == request.astack) {
        *reply = it->message;
        if (fd != nullptr) *fd = std::move(it->fd);
        pending.erase(it);
        return {};
      }
    }
    Pending got{};
    int waitMs = kClerkReplyMs;
    if (deadlineNs != 0) {
      int64_t leftMs = (deadlineNs - detail::monotonicNs()) / 1'000'000;
      waitMs = static_cast<int>(std::clamp<int64_t>(leftMs, 0, kClerkReplyMs));
    }
    Status s = detail::recvMessage(socket.get(), &got.message, sizeof got.message, &got.fd, waitMs);
    if (!s.isOk() && s.code() == Errc::kDeadlineExceeded && waitMs < kClerkReplyMs) {
      return Status(Errc::kDeadlineExceeded, "deadline passed waiting for the server's clerk");
    }
    if (!s.isOk()) {
      owner.markDead();
      return s.code() == Errc::kDeadlineExceeded ? Status(Errc::kPeerDied, "server's clerk stopped answering") : s;
    }
    pending.push_back(std::move(got));
  }
}

Status LocalBinding::startAStack(uint32_t index, Duration callTimeout) noexcept {
  detail::Message req{detail::MsgType::kStartThread, index, 0, 0, {}};
  detail::Message reply{};
  int64_t deadline = callTimeout.count() > 0 ? detail::monotonicNs() + callTimeout.count() : 0;
  MutexLock lock(slow_->sockMu);
  if (Status s = slow_->exchangeLocked(req, detail::MsgType::kThreadStarted, &reply, nullptr, deadline); !s.isOk()) return s;
  if (reply.status != 0) {
    return Status(errcFromWire(reply.status), "server could not start a thread for this A-stack");
  }
  slots_[index].started = true;
  return {};
}

Result<std::span<std::byte>> LocalBinding::argOutOfBand(uint32_t index, size_t n) noexcept {
  Slot& slot = slots_[index];
  if (!slot.argSegment || slot.argSegment->size() < n) {
    slot.argSegment.reset();
    detail::Message req{detail::MsgType::kGrowArgs, index, n, 0, {}};
    detail::Message reply{};
    OwnedFd fd;
    {
      MutexLock lock(slow_->sockMu);
      if (Status s = slow_->exchangeLocked(req, detail::MsgType::kArgSegment, &reply, &fd); !s.isOk()) return s;
    }
    if (reply.status != 0) return Status(errcFromWire(reply.status), "server refused an argument segment");
    if (reply.bytes < n) return Status(Errc::kBadFrame, "argument segment smaller than asked for");
    Result<SharedMemory> seg = SharedMemory::adopt(std::move(fd), reply.bytes);
    if (!seg.isOk()) return seg.status();
    slot.argSegment = std::make_unique<SharedMemory>(std::move(*seg));
  }
  return std::span<std::byte>(slot.argSegment->data(), n);
}

Result<std::span<const std::byte>> LocalBinding::resultOutOfBand(uint32_t index, size_t n) noexcept {
  Slot& slot = slots_[index];
  {
    // The server sent any new segment before it returned the call, so it is already queued on
    // the socket (or was stashed in pending by another thread): drain without waiting.
    MutexLock lock(slow_->sockMu);
    std::vector<Slow::Pending>& pending = slow_->pending;
    for (;;) {
      Slow::Pending got{};
      Status s = detail::recvMessage(slow_->socket.get(), &got.message, sizeof got.message, &got.fd, 0);
      if (s.code() == Errc::kDeadlineExceeded) break;
      if (!s.isOk()) {
        markDead();
        return s;
      }
      pending.push_back(std::move(got));
    }
    for (auto it = pending.begin(); it != pending.end();) {
      if (it->message.type == detail::MsgType::kResultSegment && it->message.astack == index) {
        Result<SharedMemory> seg = SharedMemory::adopt(std::move(it->fd), it->message.bytes);
        if (!seg.isOk()) return seg.status();
        slot.resultSegment = std::make_unique<SharedMemory>(std::move(*seg));
        it = pending.erase(it);
      } else {
        ++it;
      }
    }
  }
  if (!slot.resultSegment || slot.resultSegment->size() < n) {
    return Status(Errc::kBadFrame, "result tail beyond its out-of-band segment");
  }
  return std::span<const std::byte>(slot.resultSegment->data(), n);
}

Status LocalBinding::callError(uint32_t index, uint8_t code, uint32_t detailBytes) noexcept {
  const Errc errc = errcFromWire(code);
  if (errc == Errc::kBadFrame && code != static_cast<uint8_t>(Errc::kBadFrame)) {
    return Status(Errc::kBadFrame, "unknown status from server");
  }
  const ProcedureLayout& pl = layout_.procedure(layout_.procedureOf(index));
  // detailBytes was read once by the caller; bounded here, it is never read again.
  const uint32_t len = std::min(detailBytes, pl.frameBytes - pl.resultsOff);
  // The detail text stands where the results would (see Connection::writeReturn).
  const char* text = reinterpret_cast<const char*>(returnControl(index)) + kControlBytes;
  return Status(errc, detail::wireDetail(text, len));
}

}  // namespace lrpc

namespace lrpc {

Result<uint32_t> LocalBinding::exportCallback(const HostedObject& object, uint32_t limit) noexcept {
  // Every call that passes an object comes here: once the host exists, no lock but the table's.
  // Acquire: pairs with the release below; the host is complete and stays with the binding.
  if (detail::CallbackHost* host = slow_->guestHost.load(std::memory_order_acquire); host != nullptr) {
    Result<uint32_t> id = host->table().add(object);
    if (!id.isOk()) return id.status();
    return *id | kClientHostedCap;
  }
  MutexLock lock(slow_->callbacksMu);
  if (!slow_->callbacks) {
    OwnedFd peerEnd;
    Result<std::unique_ptr<detail::CallbackHost>> host = [&]() -> Result<std::unique_ptr<detail::CallbackHost>> {
      try {
        return detail::CallbackHost::start(limit, &peerEnd, detail::GuestSeats{base_, &layout_});
      } catch (const std::exception& e) {  // thread or allocation failure
        return Status(Errc::kResourceExhausted, {"callback host: ", e.what()});
      }
    }();
    if (!host.isOk()) return host.status();
    detail::Message req{detail::MsgType::kCallbacks, detail::kBindingWide, 0, 0, {}};
    detail::Message reply{};
    {
      MutexLock sockLock(slow_->sockMu);
      if (Status s = slow_->exchangeLocked(req, detail::MsgType::kCallbacksReady, &reply, nullptr, 0, peerEnd.get());
          !s.isOk()) {
        return s;
      }
    }
    if (reply.status != 0) return Status(errcFromWire(reply.status), "the server refused this client's callbacks");
    slow_->callbacks = std::move(*host);
    // Release: a caller that sees the flag finds the host. A blocking binding's callers sleep
    // at once, so they run no callbacks.
    slow_->guestHost.store(slow_->callbacks.get(), std::memory_order_release);
    if (mode_ != TransferMode::kBlock) guest_.store(true, std::memory_order_release);
  }
  Result<uint32_t> id = slow_->callbacks->table().add(object);
  if (!id.isOk()) return id.status();
  return *id | kClientHostedCap;
}

void LocalBinding::releaseCallback(uint32_t id) noexcept {
  // Acquire: as in exportCallback; without a host this client passed nothing to release.
  if (detail::CallbackHost* host = slow_->guestHost.load(std::memory_order_acquire); host != nullptr) {
    // Relaxed: a statistic.
    if (host->table().release(id).isOk()) releasesCarried_.fetch_add(1, std::memory_order_relaxed);
  }
}

Result<HostedObject> LocalBinding::findCallback(uint32_t id, uint64_t ifaceId) const noexcept {
  // Acquire: as in exportCallback; a host not yet visible here was never passed to the server.
  detail::CallbackHost* host = slow_->guestHost.load(std::memory_order_acquire);
  if (host == nullptr) return Status(Errc::kBadFrame, "the server passed a callback id, but this client passed none");
  return host->table().find(id & ~kClientHostedCap, ifaceId);
}

}  // namespace lrpc
