// The same-host "Call" (the concept is documented on RemoteCall in stub_support.h): one call
// through an A-stack of a LocalBinding. The fast path is inline here: take the thread's cached
// A-stack (plain loads and stores) or pop one from the pool (one exchange), let the stub
// write the arguments, write the call block, ring the call doorbell, spin
// briefly on the return doorbell, read the status from the return block. No lock, no allocation,
// no system call unless a side sleeps. Slow paths (no free A-stack, first use of an A-stack,
// sleeping, out-of-band tails, errors) are out of line in LocalBinding.
//
// A LocalCall lives on the caller's stack for one call; it owns its A-stack from the
// constructor to the destructor, which returns it (LIFO) unless the server still has it.
#pragma once

#include <cstring>

#include "runtime/base/bulk_copy.h"
#include "runtime/codec.h"
#include "runtime/local_binding.h"

namespace lrpc {

class LocalCall {
 public:
  // Spins on the return doorbell inline this many times before the out-of-line wait.
  static constexpr uint32_t kInlineSpins = 64;
  // An out-of-band argument tail at least this long is streamed: the call is published when the
  // stub starts copying it, and the server copies each chunk out while the client writes the
  // next, so the two copies of a large argument overlap instead of running one after the other.
  static constexpr size_t kStreamBytes = lrpc::kStreamBytes;
  static constexpr size_t kStreamChunk = lrpc::kStreamChunk;

  LocalCall(const Binding& binding, uint32_t procedure, const CallOptions& options,
            detail::Reclaim reclaim = {}) noexcept
      : binding_(binding), lb_(binding.local), procedure_(procedure), timeout_(options.timeout) {
    if (lb_ == nullptr) [[unlikely]] {
      status_ = Status(Errc::kBindingRejected, "not a same-host binding");
      return;
    }
    if (binding.capId != 0) [[unlikely]] {
      // A capability's call: procedure_ becomes the tunnel's, which carries it.
      if (Status s = aimAtCapability(procedure); !s.isOk()) {
        status_ = std::move(s);
        return;
      }
    } else if (procedure >= lb_->procedureCount()) [[unlikely]] {
      status_ = Status(Errc::kInvalidArgument, "procedure out of range");
      return;
    }
    if (lb_->dead()) [[unlikely]] {
      status_ = Status(Errc::kPeerDied, "server of this binding is gone");
      return;
    }
    proc_ = &lb_->procedure(procedure_);
    uint32_t index = proc_->take(lane_);
    if (index == detail::AStackPool::kEmpty) [[unlikely]] {
      Result<uint32_t> r = lb_->acquireSlow(procedure_, timeout_, reclaim);
      if (!r.isOk()) {
        status_ = r.status();
        return;
      }
      index = *r;
    }
    index_ = index;
    LocalBinding::Slot& slot = lb_->slot(index);
    ctl_ = slot.ctl;
    frame_ = reinterpret_cast<std::byte*>(ctl_) + kControlBytes;
    ret_ = reinterpret_cast<ReturnControl*>(frame_ + proc_->layout.returnOff);
    args_ = frame_;
    results_ = frame_ + proc_->layout.resultsOff;
    // A capability's frame opens the tunnel's inline argument tail (bindingOfImport made sure
    // that every fixed part of its interface fits there).
    if (inner_ != nullptr) [[unlikely]] args_ = innerFrame_ = frame_ + proc_->layout.argTailOff;
    if (!slot.started) [[unlikely]] {
      if (Status s = lb_->startAStack(index, timeout_); !s.isOk()) {
        status_ = std::move(s);
        return;  // the destructor gives the A-stack back
      }
    }
    // The argument part is not cleared: the stub writes every field, and bytes between fields
    // hold only what this client wrote there before (astack_format.md, "Layout").
  }

  ~LocalCall() {
    if (streaming_ && !invoked_) [[unlikely]] {
      // Published but never invoked: the server has the A-stack, so let it finish the call
      // and take the A-stack back only once it has returned.
      // Release: as in copyTail.
      ctl_->argReady.store(argTail_, std::memory_order_release);
      if (lane_ != nullptr) detail::AStackCache::drop(*lane_);
      lb_->abandon(index_, streamSeq_);
      return;
    }
    if (index_ == detail::AStackPool::kEmpty) return;
    if (!keep_) {
      proc_->give(index_, lane_);
    } else if (lane_ != nullptr) [[unlikely]] {
      // Abandoned to a late return: out of the lane, until the return puts it in the pool.
      detail::AStackCache::drop(*lane_);
    }
  }
  LocalCall(const LocalCall&) = delete;
  LocalCall& operator=(const LocalCall&) = delete;

  const Status& status() const noexcept { return status_; }
  const Binding& binding() const noexcept { return binding_; }
  std::byte* args() noexcept { return args_; }

  Result<std::span<std::byte>> argTail(size_t n) noexcept {
    if (inner_ != nullptr) [[unlikely]] return capabilityArgTail(n);
    if (n <= proc_->layout.tailRoom) {
      argTail_ = static_cast<uint32_t>(n);
      return std::span<std::byte>(frame_ + proc_->layout.argTailOff, n);
    }
    Result<std::span<std::byte>> r = lb_->argOutOfBand(index_, n);
    if (r.isOk()) {
      argTail_ = static_cast<uint32_t>(n);
      argFlags_ = kTailOutOfBand;
    }
    return r;
  }

  // Copies one value of the argument tail into place (dst lies in the span argTail returned,
  // after every value written before it). Streams a large out-of-band tail (kStreamBytes).
  void copyTail(std::byte* dst, const void* src, size_t n) noexcept {
    // Not a capability's call: its fixed part goes in front of the tail only at launch.
    if (argFlags_ == kTailOutOfBand && argTail_ >= kStreamBytes && status_.isOk() && inner_ == nullptr) [[unlikely]] {
      startStream();
    }
    if (!streaming_) {
      detail::bulkCopy(dst, src, n);
      return;
    }
    const auto* from = static_cast<const std::byte*>(src);
    for (size_t done = 0; done < n;) {
      size_t c = n - done < kStreamChunk ? n - done : kStreamChunk;
      detail::bulkCopy(dst + done, from + done, c);
      done += c;
      // Release: the server reads these bytes once it sees them counted.
      ctl_->argReady.store(static_cast<uint32_t>(dst + done - tailBase_), std::memory_order_release);
    }
  }

  // Publishes the call now, before the out-of-band argument tail is written, for a caller that
  // produces the tail in place (SharedBuffer::start): the server copies each part out once
  // readyTail() counts it final. False, and nothing done, for a tail inline in the A-stack
  // (then invoke() publishes as usual) or a call already published or failed.
  bool streamTail() noexcept {
    if (argFlags_ != kTailOutOfBand || streaming_ || invoked_ || !status_.isOk() || inner_ != nullptr) return false;
    startStream();
    return true;
  }
  // After streamTail(): the first n bytes of the tail are final (n only grows).
  void readyTail(size_t n) noexcept {
    if (!streaming_ || invoked_) return;
    // Release: the server reads these bytes once it sees them counted.
    ctl_->argReady.store(static_cast<uint32_t>(n < argTail_ ? n : argTail_), std::memory_order_release);
  }

  Status invoke() noexcept {
    if (!status_.isOk()) return status_;
    if (inner_ != nullptr) [[unlikely]] {
      if (Status s = sealCapabilityArgs(); !s.isOk()) return s;
    }
    if (lb_->servesCallbacks() && !streaming_) [[unlikely]] return invokeAsGuest();
    const uint32_t seq = launch(/*later=*/true);
    bool ready = false;
    for (uint32_t i = 0; i < kInlineSpins; ++i) {
      // Acquire: pairs with the server's release in ring(); the results are visible after it.
      if (detail::seqIs(ret_->returnWord.load(std::memory_order_acquire), seq)) {
        ready = true;
        break;
      }
      detail::cpuRelax();
    }
    if (!ready) [[unlikely]] {
      // Before the wait, which may sleep: a server thread that went to sleep as we rang is
      // woken now (transfer.h, ringLater).
      if (ringDue_) {
        ringDue_ = false;
        detail::ringNow(ctl_->callWord, ctl_->serverSleeping);
      }
      // The deadline is read off the clock only here, kInlineSpins pauses after the call was
      // published: a clock read on every call would cost a fast call a tenth of its time.
      deadline_ = timeout_.count() > 0 ? detail::monotonicNs() + timeout_.count() : 0;
      const uint32_t spins = streaming_ ? detail::streamedSpins(argTail_) : detail::kAdaptiveSpins;
      if (Status s = lb_->waitReturn(index_, seq, deadline_, spins); !s.isOk()) {
        // The server may still be running the call: the A-stack stays out of the pool
        // (abandoned until the late return, or dead with the binding).
        keep_ = true;
        return s;
      }
    }
    detail::timeline(detail::Mark::kClientReturn, seq);
    return readReturn();
  }

  // The asynchronous form of invoke() (runtime/async_call.h): start() publishes the call,
  // await() completes it. In between the A-stack stays this call's, so a thread may have as
  // many calls in flight per procedure as it has A-stacks.
  struct Async {};
  LocalCall(const Binding& binding, uint32_t procedure, const CallOptions& options, Async,
            detail::Reclaim reclaim) noexcept
      : LocalCall(binding, procedure, options, reclaim) {
    // Counted from the start, not after an inline spin: an asynchronous call has none.
    if (status_.isOk() && timeout_.count() > 0) deadline_ = detail::monotonicNs() + timeout_.count();
  }
  Status start() noexcept {
    if (!status_.isOk()) return status_;
    if (inner_ != nullptr) [[unlikely]] {
      if (Status s = sealCapabilityArgs(); !s.isOk()) return s;
    }
    seq_ = launch();
    return {};
  }
  // Empty while the server runs the call (waiting for it until `untilNs` at most, 0: only a
  // look); then its outcome, as invoke() returns it. The call's deadline applies.
  std::optional<Status> await(int64_t untilNs) noexcept {
    // Acquire: pairs with the server's release in ring(); the results are visible after it.
    if (detail::seqIs(ret_->returnWord.load(std::memory_order_acquire), seq_)) return readReturn();
    Result<bool> r = lb_->pollReturn(index_, seq_, untilNs, deadline_, ++looks_);
    if (!r.isOk()) {
      keep_ = true;  // abandoned (deadline) or dead: the A-stack stays out of the pool
      return r.status();
    }
    if (!*r) return std::nullopt;
    return readReturn();
  }
  // Gives the call up: the caller is released at once, and the A-stack comes back to the pool
  // only once the server has returned the call (as for a deadline).
  void cancel() noexcept {
    if (!invoked_ || keep_) return;
    keep_ = true;
    lb_->abandon(index_, seq_);
  }

  const std::byte* results() const noexcept { return results_; }
  std::span<const std::byte> resultTail() const noexcept { return resultTail_; }
  // The tail lies in the A-stack or its out-of-band segment, which the server may still write:
  // it is never apart, and a value is always copied out. But since takeResultBytes is then the
  // only reader of the tail, a large one may be streamed (astack_format.md, "Streaming a large
  // result"): the server publishes the return before it has written all of it.
  void resultTailApart(std::vector<uint8_t>&) noexcept {
    if (inner_ == nullptr) resultStreamable_ = true;
  }
  Status takeResultBytes(std::span<const std::byte> tail, VarRef ref, std::vector<uint8_t>& out) {
    if (!resultStreamed_) [[likely]] {
      detail::copyBytes(tail, ref, out);
      return {};
    }
    const int64_t deadline = deadline_ != 0 || timeout_.count() <= 0 ? deadline_ : detail::monotonicNs() + timeout_.count();
    // The call's number is the A-stack's last (publish), for a call of any kind.
    Status s = lb_->copyStreamedResult(index_, lb_->slot(index_).seq, tail, ref, out, deadline);
    // The server may still be writing the tail: the A-stack comes back once it has finished
    // (LocalBinding::copyStreamedResult gave it up to that), or never if the server died.
    if (!s.isOk()) keep_ = true;
    return s;
  }

 private:
  // invoke() on a binding that passed callbacks: this thread runs the callbacks its call
  // causes while it waits (runtime/callbacks.h), so the inline spin is left to waitReturnAsGuest.
  Status invokeAsGuest() noexcept {
    // Relaxed: published with the call by the release in ring(); the number publish() gives it.
    ret_->guestSeq.store(lb_->slot(index_).seq + 1, std::memory_order_relaxed);
    const uint32_t seq = launch();
    // Read off the clock only if the wait needs it: before running a callback, or when it
    // checks, as invoke()'s is read only after its inline spin.
    detail::LazyDeadline deadline = detail::LazyDeadline::after(timeout_.count());
    if (Status s = lb_->waitReturnAsGuest(index_, seq, deadline); !s.isOk()) {
      keep_ = true;  // as in invoke()
      return s;
    }
    return readReturn();
  }

  // The returned call's status and result tail, from the return block.
  Status readReturn() noexcept {
    // The server can rewrite its return block at any time: each field is read once, and only
    // the copies are checked and used.
    const uint8_t code = detail::loadOnce(ret_->status);
    const uint32_t tail = detail::loadOnce(ret_->resultTail);
    // An object of ours the handler dropped: released before the call returns to its caller
    // (runtime/astack_format.md, "Releases ride on the return").
    if (const uint32_t released = detail::loadOnce(ret_->releasedId); released != 0) [[unlikely]] {
      lb_->releaseCallback(released);
    }
    if (code != 0) [[unlikely]] return lb_->callError(index_, code, tail);
    if (const uint8_t flags = detail::loadOnce(ret_->resultFlags); flags & kTailOutOfBand) [[unlikely]] {
      if (flags & kTailStreaming) {
        if (!resultStreamable_) return Status(Errc::kBadFrame, "a streamed result tail this call cannot take");
        resultStreamed_ = true;
      }
      Result<std::span<const std::byte>> r = lb_->resultOutOfBand(index_, tail);
      if (!r.isOk()) return r.status();
      resultTail_ = *r;
    } else {
      if (tail > proc_->layout.tailRoom) [[unlikely]] return Status(Errc::kBadFrame, "result tail too long");
      resultTail_ = std::span<const std::byte>(frame_ + proc_->layout.resultTailOff, tail);
    }
    if (inner_ != nullptr) [[unlikely]] return openCapabilityResults();
    return {};
  }

  // A call on a same-host capability (Binding::capId) rides on the binding's tunnel procedure
  // (runtime/capability.h): its frame is the tunnel's argument tail, its reply the tunnel's
  // result tail, written and read in place. Out of line, in runtime/local_call_caps.cc.
  Status aimAtCapability(uint32_t procedure) noexcept;
  Result<std::span<std::byte>> capabilityArgTail(size_t n) noexcept;
  Status sealCapabilityArgs() noexcept;
  Status openCapabilityResults() noexcept;

  // Hands the call whose arguments are written to the server; returns its sequence number.
  // With `later`, a call rung by ringLater leaves its ringNow to the caller (ringDue_).
  uint32_t launch(bool later = false) noexcept {
    invoked_ = true;
    if (streaming_) [[unlikely]] {
      // Release: the whole tail, including values written without copyTail, is final now.
      ctl_->argReady.store(argTail_, std::memory_order_release);
      return streamSeq_;
    }
    const uint32_t seq = publish(argFlags_, later);
    detail::demoteAfterFirstLine(ctl_, kControlBytes + proc_->layout.argTailOff + (argFlags_ == 0 ? argTail_ : 0));
    return seq;
  }

  // Writes the call block and rings the call doorbell; returns the call's sequence number.
  uint32_t publish(uint8_t flags, bool later = false) noexcept {
    ctl_->key = lb_->key();
    ctl_->procedure = procedure_;
    ctl_->argTail = argTail_;
    ctl_->argFlags = resultStreamable_ ? flags | kResultStreamable : flags;
    uint32_t seq = ++lb_->slot(index_).seq;
    if (lb_->reverse()) [[unlikely]] {
      lb_->ringReverse(ctl_, seq);
    } else {
      detail::timeline(detail::Mark::kClientRing, seq);
      if (later) {
        ringDue_ = detail::ringLater(ctl_->callWord, ctl_->serverSleeping, seq);
      } else {
        detail::ring(ctl_->callWord, ctl_->serverSleeping, seq);
      }
    }
    return seq;
  }

  // Publishes the call before its tail is written (the fixed part already is).
  void startStream() noexcept {
    tailBase_ = lb_->argSegmentBase(index_);
    // Relaxed: ordered before the server's reads by the release in ring().
    ctl_->argReady.store(0, std::memory_order_relaxed);
    streamSeq_ = publish(kTailOutOfBand | kTailStreaming);
    streaming_ = true;
  }

  const Binding& binding_;
  LocalBinding* lb_;
  LocalBinding::Proc* proc_ = nullptr;
  detail::AStackCache::Lane* lane_ = nullptr;  // the A-stack came from this thread's lane
  AStackControl* ctl_ = nullptr;
  ReturnControl* ret_ = nullptr;
  std::byte* frame_ = nullptr;
  std::byte* args_ = nullptr;            // frame_, or a capability's frame
  const std::byte* results_ = nullptr;   // the results' fixed part
  uint32_t procedure_;                   // the A-stack's (a capability's: the tunnel's)
  const ProcedureDescriptor* inner_ = nullptr;  // a capability's procedure, else null
  std::byte* innerFrame_ = nullptr;      // where a capability's frame goes (inline, or out of band)
  uint32_t index_ = detail::AStackPool::kEmpty;
  uint32_t argTail_ = 0;
  uint8_t argFlags_ = 0;
  bool keep_ = false;
  bool streaming_ = false;
  bool invoked_ = false;
  bool resultStreamable_ = false;  // resultTailApart: the server may stream the result tail
  bool resultStreamed_ = false;    // and it does: takeResultBytes waits for each part
  bool ringDue_ = false;           // rung by ringLater: ringNow before any wait that may sleep
  uint32_t streamSeq_ = 0;
  uint32_t seq_ = 0;         // start(): the call's sequence number
  uint32_t looks_ = 0;       // await()s that found no return yet
  int64_t deadline_ = 0;     // monotonic ns, 0 for none (or not read off the clock yet)
  const std::byte* tailBase_ = nullptr;
  Duration timeout_;
  std::span<const std::byte> resultTail_;
  Status status_;
};

static_assert(Call<LocalCall>);

}  // namespace lrpc
