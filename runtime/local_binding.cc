#include "runtime/local_binding.h"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <string>

#include "runtime/callbacks.h"
#include "runtime/capability.h"
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

LocalBinding::LocalBinding(const InterfaceDescriptor& iface, RegionLayout layout, SharedMemory region,
                           OwnedFd socket, uint64_t key, TransferMode mode, std::chrono::nanoseconds astackWait)
    : base_(region.data()),
      key_(key),
      mode_(mode),
      procedureCount_(layout.procedureCount()),
      procs_(std::make_unique<Proc[]>(layout.procedureCount())),
      slots_(std::make_unique<Slot[]>(layout.astackCount())),
      iface_(iface),
      layout_(std::move(layout)),
      astackWait_(astackWait),
      region_(std::move(region)),
      socket_(std::move(socket)) {
  for (uint32_t p = 0; p < procedureCount_; ++p) {
    procs_[p].layout = layout_.procedure(p);
    procs_[p].pool.init(procs_[p].layout.firstAStack, procs_[p].layout.count);
  }
}

LocalBinding::~LocalBinding() = default;

Result<uint32_t> LocalBinding::acquireSlow(uint32_t p, std::chrono::nanoseconds callTimeout,
                                           detail::Reclaim reclaim) noexcept {
  bool callDeadline = callTimeout.count() > 0 && callTimeout < astackWait_;
  int64_t deadline = detail::monotonicNs() + (callDeadline ? callTimeout : astackWait_).count();
  for (uint32_t round = 0;; ++round) {
    // A hint only (the list itself is under abandonedMu_): skip the lock when nothing waits.
    if (anyAbandoned_.load(std::memory_order_acquire)) reclaimAbandoned();
    if (reclaim.fn != nullptr) reclaim.fn(reclaim.context);
    uint32_t index = procs_[p].pool.pop();
    if (index != detail::AStackPool::kEmpty) return index;
    if (dead()) return Status(Errc::kPeerDied, "server of this binding is gone");
    if (detail::monotonicNs() >= deadline) {
      if (callDeadline) return Status(Errc::kDeadlineExceeded, "deadline passed waiting for a free A-stack");
      return Status(Errc::kResourceExhausted, std::string("all A-stacks of ") + iface_.name + "." +
                                                  iface_.procedures[p].name + " stayed in use");
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
  MutexLock lock(abandonedMu_);
  auto done = [this](const Abandoned& a) {
    // Acquire: once the server returned the abandoned call, it no longer touches the A-stack.
    if (!detail::seqIs(returnControl(a.index)->returnWord.load(std::memory_order_acquire), a.seq)) return false;
    // Relaxed: ordered before the next call's handler reads it by the release in ring().
    returnControl(a.index)->cancelWord.store(0, std::memory_order_relaxed);
    procs_[layout_.procedureOf(a.index)].pool.push(a.index);
    return true;
  };
  abandoned_.erase(std::remove_if(abandoned_.begin(), abandoned_.end(), done), abandoned_.end());
  anyAbandoned_.store(!abandoned_.empty(), std::memory_order_release);
}

void LocalBinding::abandon(uint32_t index, uint32_t seq) noexcept {
  // Relaxed: a hint the handler may read at any time; nothing is read because of it. Sequence
  // number 0 (after a wrap) is never marked: 0 means none.
  returnControl(index)->cancelWord.store(seq, std::memory_order_relaxed);
  MutexLock lock(abandonedMu_);
  abandoned_.push_back({index, seq});
  anyAbandoned_.store(true, std::memory_order_release);
}

Status LocalBinding::waitReturn(uint32_t index, uint32_t seq, int64_t deadlineNs, uint32_t adaptiveSpins) noexcept {
  ReturnControl* ret = returnControl(index);
  switch (detail::waitForReturn(ret->returnWord, ret->clientSleeping, seq, mode_, socket_.get(), deadlineNs, adaptiveSpins)) {
    case detail::WaitResult::kReady:
      return {};
    case detail::WaitResult::kTimedOut:
      abandon(index, seq);
      return Status(Errc::kDeadlineExceeded, "no reply before the call's deadline");
    case detail::WaitResult::kPeerDied:
    case detail::WaitResult::kStopped:
    case detail::WaitResult::kHelped:  // a server's only
      break;
  }
  markDead();
  return Status(Errc::kPeerDied, "server process went away during the call");
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
    if (looks % detail::kCheckEvery == 0 && detail::peerGone(socket_.get())) {
      markDead();
      return Status(Errc::kPeerDied, "server process went away during the call");
    }
    return false;
  }
  const int64_t until = deadlineNs != 0 && deadlineNs < untilNs ? deadlineNs : untilNs;
  ReturnControl* ret = returnControl(index);
  switch (detail::waitForReturn(ret->returnWord, ret->clientSleeping, seq, mode_, socket_.get(), until)) {
    case detail::WaitResult::kReady:
      return true;
    case detail::WaitResult::kTimedOut:
      if (deadlineNs != 0 && detail::monotonicNs() >= deadlineNs) {
        abandon(index, seq);
        return Status(Errc::kDeadlineExceeded, "no reply before the call's deadline");
      }
      return false;
    case detail::WaitResult::kPeerDied:
    case detail::WaitResult::kStopped:
    case detail::WaitResult::kHelped:  // a server's only
      break;
  }
  markDead();
  return Status(Errc::kPeerDied, "server process went away during the call");
}

Status LocalBinding::exchangeLocked(const detail::Message& request, detail::MsgType want, detail::Message* reply,
                                    OwnedFd* fd, int64_t deadlineNs, int attach) noexcept {
  if (Status s = detail::sendMessage(socket_.get(), &request, sizeof request, attach); !s.isOk()) {
    if (s.code() == Errc::kPeerDied) markDead();
    return s;
  }
  for (;;) {
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
      if (it->message.type == want && it->message.astack == request.astack) {
        *reply = it->message;
        if (fd != nullptr) *fd = std::move(it->fd);
        pending_.erase(it);
        return {};
      }
    }
    Pending got{};
    int waitMs = kClerkReplyMs;
    if (deadlineNs != 0) {
      int64_t leftMs = (deadlineNs - detail::monotonicNs()) / 1'000'000;
      waitMs = static_cast<int>(std::clamp<int64_t>(leftMs, 0, kClerkReplyMs));
    }
    Status s = detail::recvMessage(socket_.get(), &got.message, sizeof got.message, &got.fd, waitMs);
    if (!s.isOk() && s.code() == Errc::kDeadlineExceeded && waitMs < kClerkReplyMs) {
      return Status(Errc::kDeadlineExceeded, "deadline passed waiting for the server's clerk");
    }
    if (!s.isOk()) {
      markDead();
      return s.code() == Errc::kDeadlineExceeded ? Status(Errc::kPeerDied, "server's clerk stopped answering") : s;
    }
    pending_.push_back(std::move(got));
  }
}

Status LocalBinding::startAStack(uint32_t index, std::chrono::nanoseconds callTimeout) noexcept {
  detail::Message req{detail::MsgType::kStartThread, index, 0, 0, {}};
  detail::Message reply{};
  int64_t deadline = callTimeout.count() > 0 ? detail::monotonicNs() + callTimeout.count() : 0;
  MutexLock lock(sockMu_);
  if (Status s = exchangeLocked(req, detail::MsgType::kThreadStarted, &reply, nullptr, deadline); !s.isOk()) return s;
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
      MutexLock lock(sockMu_);
      if (Status s = exchangeLocked(req, detail::MsgType::kArgSegment, &reply, &fd); !s.isOk()) return s;
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
    // the socket (or was stashed in pending_ by another thread): drain without waiting.
    MutexLock lock(sockMu_);
    for (;;) {
      Pending got{};
      Status s = detail::recvMessage(socket_.get(), &got.message, sizeof got.message, &got.fd, 0);
      if (s.code() == Errc::kDeadlineExceeded) break;
      if (!s.isOk()) {
        markDead();
        return s;
      }
      pending_.push_back(std::move(got));
    }
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->message.type == detail::MsgType::kResultSegment && it->message.astack == index) {
        Result<SharedMemory> seg = SharedMemory::adopt(std::move(it->fd), it->message.bytes);
        if (!seg.isOk()) return seg.status();
        slot.resultSegment = std::make_unique<SharedMemory>(std::move(*seg));
        it = pending_.erase(it);
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
  // The detail text stands where the results would (see Connection::serveOne).
  const char* text = reinterpret_cast<const char*>(returnControl(index)) + kControlBytes;
  return Status(errc, std::string_view(text, len));
}

}  // namespace lrpc

namespace lrpc {

Result<uint32_t> LocalBinding::exportCallback(const HostedObject& object, uint32_t limit) noexcept {
  MutexLock lock(callbacksMu_);
  if (!callbacks_) {
    OwnedFd peerEnd;
    Result<std::unique_ptr<detail::CallbackHost>> host = [&]() -> Result<std::unique_ptr<detail::CallbackHost>> {
      try {
        return detail::CallbackHost::start(limit, &peerEnd);
      } catch (const std::exception& e) {  // thread or allocation failure
        return Status(Errc::kResourceExhausted, std::string("callback host: ") + e.what());
      }
    }();
    if (!host.isOk()) return host.status();
    detail::Message req{detail::MsgType::kCallbacks, detail::kBindingWide, 0, 0, {}};
    detail::Message reply{};
    {
      MutexLock sockLock(sockMu_);
      if (Status s = exchangeLocked(req, detail::MsgType::kCallbacksReady, &reply, nullptr, 0, peerEnd.get());
          !s.isOk()) {
        return s;
      }
    }
    if (reply.status != 0) return Status(errcFromWire(reply.status), "the server refused this client's callbacks");
    callbacks_ = std::move(*host);
  }
  Result<uint32_t> id = callbacks_->table().add(object);
  if (!id.isOk()) return id.status();
  return *id | kClientHostedCap;
}

Result<HostedObject> LocalBinding::findCallback(uint32_t id, uint64_t ifaceId) const noexcept {
  MutexLock lock(callbacksMu_);
  if (!callbacks_) return Status(Errc::kBadFrame, "the server passed a callback id, but this client passed none");
  return callbacks_->table().find(id & ~kClientHostedCap, ifaceId);
}

}  // namespace lrpc
