// The same-host "Call" (the concept is documented on RemoteCall in stub_support.h): one call
// through an A-stack of a LocalBinding. The fast path is inline here: pop an A-stack (one
// CAS), let the stub write the arguments, write the call block, ring the call doorbell, spin
// briefly on the return doorbell, read the status from the return block. No lock, no allocation,
// no system call unless a side sleeps. Slow paths (no free A-stack, first use of an A-stack,
// sleeping, out-of-band tails, errors) are out of line in LocalBinding.
//
// A LocalCall lives on the caller's stack for one call; it owns its A-stack from the
// constructor to the destructor, which returns it (LIFO) unless the server still has it.
#pragma once

#include <cstring>

#include "runtime/stub_support.h"
#include "runtime/local_binding.h"

namespace lrpc {

class LocalCall {
 public:
  // Spins on the return doorbell inline this many times before the out-of-line wait.
  static constexpr uint32_t kInlineSpins = 64;

  LocalCall(const Binding& binding, uint32_t procedure, const CallOptions& options) noexcept
      : lb_(binding.local), procedure_(procedure), timeout_(options.timeout) {
    if (lb_ == nullptr) [[unlikely]] {
      status_ = Status(Errc::kBindingRejected, "not a same-host binding");
      return;
    }
    if (procedure >= lb_->procedureCount()) [[unlikely]] {
      status_ = Status(Errc::kInvalidArgument, "procedure out of range");
      return;
    }
    if (lb_->dead()) [[unlikely]] {
      status_ = Status(Errc::kPeerDied, "server of this binding is gone");
      return;
    }
    proc_ = &lb_->procedure(procedure);
    uint32_t index = proc_->pool.pop();
    if (index == detail::AStackPool::kEmpty) [[unlikely]] {
      Result<uint32_t> r = lb_->acquireSlow(procedure, timeout_);
      if (!r.isOk()) {
        status_ = r.status();
        return;
      }
      index = *r;
    }
    index_ = index;
    ctl_ = lb_->control(index);
    frame_ = reinterpret_cast<std::byte*>(ctl_) + kControlBytes;
    ret_ = reinterpret_cast<ReturnControl*>(frame_ + proc_->layout.returnOff);
    if (!lb_->slot(index).started) [[unlikely]] {
      if (Status s = lb_->startAStack(index, timeout_); !s.isOk()) {
        status_ = std::move(s);
        return;  // the destructor gives the A-stack back
      }
    }
    // The argument part is not cleared: the stub writes every field, and bytes between fields
    // hold only what this client wrote there before (astack_format.md, "Layout").
  }

  ~LocalCall() {
    if (index_ != detail::AStackPool::kEmpty && !keep_) proc_->pool.push(index_);
  }
  LocalCall(const LocalCall&) = delete;
  LocalCall& operator=(const LocalCall&) = delete;

  const Status& status() const noexcept { return status_; }
  std::byte* args() noexcept { return frame_; }

  Result<std::span<std::byte>> argTail(size_t n) noexcept {
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

  Status invoke() noexcept {
    if (!status_.isOk()) return status_;
    int64_t deadline = 0;
    if (timeout_.count() > 0) [[unlikely]] deadline = detail::monotonicNs() + timeout_.count();
    ctl_->key = lb_->key();
    ctl_->procedure = procedure_;
    ctl_->argTail = argTail_;
    ctl_->argFlags = argFlags_;
    uint32_t seq = ++lb_->slot(index_).seq;
    detail::ring(ctl_->callWord, seq);
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
      if (Status s = lb_->waitReturn(index_, seq, deadline); !s.isOk()) {
        // The server may still be running the call: the A-stack stays out of the pool
        // (abandoned until the late return, or dead with the binding).
        keep_ = true;
        return s;
      }
    }
    uint8_t code = ret_->status;
    if (code != 0) [[unlikely]] return lb_->callError(index_, code);
    uint32_t tail = ret_->resultTail;
    if (ret_->resultFlags & kTailOutOfBand) [[unlikely]] {
      Result<std::span<const std::byte>> r = lb_->resultOutOfBand(index_, tail);
      if (!r.isOk()) return r.status();
      resultTail_ = *r;
    } else {
      if (tail > proc_->layout.tailRoom) [[unlikely]] return Status(Errc::kBadFrame, "result tail too long");
      resultTail_ = std::span<const std::byte>(frame_ + proc_->layout.resultTailOff, tail);
    }
    return {};
  }

  const std::byte* results() const noexcept { return frame_ + proc_->layout.resultsOff; }
  std::span<const std::byte> resultTail() const noexcept { return resultTail_; }

 private:
  LocalBinding* lb_;
  LocalBinding::Proc* proc_ = nullptr;
  AStackControl* ctl_ = nullptr;
  ReturnControl* ret_ = nullptr;
  std::byte* frame_ = nullptr;
  uint32_t procedure_;
  uint32_t index_ = detail::AStackPool::kEmpty;
  uint32_t argTail_ = 0;
  uint8_t argFlags_ = 0;
  bool keep_ = false;
  std::chrono::nanoseconds timeout_;
  std::span<const std::byte> resultTail_;
  Status status_;
};

}  // namespace lrpc
