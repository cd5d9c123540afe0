// A same-host call of a procedure whose arguments and results are all fixed-size: no tail
// either way and no capability. Generated code tries it before a LocalCall for such a method
// (stubgen/generated_code.md, "Plain calls"): it is LocalCall's common case without
// LocalCall's generality, on the same protocol (runtime/astack_format.md). It starts only on
// the calling thread's cached A-stack of the procedure (runtime/astack_cache.h), one the server
// has a thread for already, through a binding that is not a capability's, not dead, not one
// that passed callbacks and not a callback binding. Anywhere else ready() is false, it holds
// nothing, and the caller makes a LocalCall, which handles every case.
//
// What it leaves out is what a Null call paid for that generality: about half of the client's
// instructions (bench/README.md, "Plain calls"), with no tail, streaming, capability or guest
// state to set up, carry and check.
#pragma once

#include <cstring>
#include <span>
#include <vector>

#include "runtime/contract.h"
#include "runtime/local_binding.h"

namespace lrpc {

class PlainCall {
 public:
  PlainCall(const Binding& binding, uint32_t procedure, const CallOptions& options) noexcept
      : binding_(binding), timeout_(options.timeout) {
    LocalBinding* lb = binding.local;
    if (lb == nullptr || binding.capId != 0 || procedure >= lb->procedureCount()) [[unlikely]] return;
    if (lb->dead() || lb->servesCallbacks() || lb->reverse()) [[unlikely]] return;
    LocalBinding::Proc& proc = lb->procedure(procedure);
    detail::AStackCache::Lane* lane = proc.cache.take(detail::threadSelf());
    if (lane == nullptr) return;
    LocalBinding::Slot& slot = lb->slot(lane->index);
    if (!slot.started) [[unlikely]] {
      detail::AStackCache::finish(*lane);  // LocalCall asks the clerk for its thread
      return;
    }
    lb_ = lb;
    lane_ = lane;
    slot_ = &slot;
    layout_ = &proc.layout;
    procedure_ = procedure;
  }
  ~PlainCall() {
    if (lane_ == nullptr) return;
    if (abandoned_) [[unlikely]] {
      detail::AStackCache::drop(*lane_);  // out of the lane until the late return (as LocalCall)
    } else {
      detail::AStackCache::finish(*lane_);
    }
  }
  PlainCall(const PlainCall&) = delete;
  PlainCall& operator=(const PlainCall&) = delete;

  // Whether this call goes ahead; if not, the caller makes a LocalCall instead.
  bool ready() const noexcept { return lane_ != nullptr; }

  // The Call contract (runtime/contract.h), of which generated code uses only status(),
  // binding(), args(), invoke() and results() for a call with no tail and no capability.
  Status status() const noexcept { return {}; }
  const Binding& binding() const noexcept { return binding_; }
  std::byte* args() noexcept { return frame(); }
  Result<std::span<std::byte>> argTail(size_t) noexcept {
    return Status(Errc::kInvalidArgument, "a call with no argument tail asked for one");
  }
  void copyTail(std::byte* dst, const void* src, size_t n) noexcept { std::memcpy(dst, src, n); }
  void resultTailApart(std::vector<uint8_t>&) noexcept {}
  const std::byte* results() const noexcept { return frame() + layout_->resultsOff; }
  std::span<const std::byte> resultTail() const noexcept { return {}; }
  Status takeResultBytes(std::span<const std::byte>, VarRef, std::vector<uint8_t>&) noexcept {
    return Status(Errc::kBadFrame, "a call with no result tail was asked for a value in one");
  }

  Status invoke() noexcept {
    AStackControl* ctl = slot_->ctl;
    ctl->key = lb_->key();
    ctl->procedure = procedure_;
    ctl->argTail = 0;
    ctl->argFlags = 0;
    const uint32_t seq = ++slot_->seq;
    detail::timeline(detail::Mark::kClientRing, seq);
    // ringNow is left to waitSlow, before a wait that may sleep (transfer.h, ringLater).
    const bool ringDue = detail::ringLater(ctl->callWord, ctl->serverSleeping, seq);
    detail::demoteAfterFirstLine(ctl, kControlBytes + layout_->argTailOff);
    const ReturnControl* ret = reinterpret_cast<const ReturnControl*>(frame() + layout_->returnOff);
    for (uint32_t i = 0; i < kInlineSpins; ++i) {
      // Acquire: pairs with the server's release in ring(); the results are visible after it.
      if (detail::seqIs(ret->returnWord.load(std::memory_order_acquire), seq)) {
        detail::timeline(detail::Mark::kClientReturn, seq);
        return readReturn(ret);
      }
      detail::cpuRelax();
    }
    return waitSlow(ret, seq, ringDue);
  }

 private:
  static constexpr uint32_t kInlineSpins = 64;  // as LocalCall's

  std::byte* frame() const noexcept { return reinterpret_cast<std::byte*>(slot_->ctl) + kControlBytes; }

  // Past the inline spin, as LocalCall::invoke: the deadline is read off the clock only here.
  [[gnu::noinline]] Status waitSlow(const ReturnControl* ret, uint32_t seq, bool ringDue) noexcept {
    AStackControl* ctl = slot_->ctl;
    if (ringDue) detail::ringNow(ctl->callWord, ctl->serverSleeping);
    const int64_t deadline = timeout_.count() > 0 ? detail::monotonicNs() + timeout_.count() : 0;
    if (Status s = lb_->waitReturn(lane_->index, seq, deadline); !s.isOk()) {
      abandoned_ = true;  // the server may still run the call (LocalBinding::endWait)
      return s;
    }
    detail::timeline(detail::Mark::kClientReturn, seq);
    return readReturn(ret);
  }

  // The server can rewrite its return block at any time: each field is read once, and only
  // the copies are checked and used (as LocalCall::readReturn).
  Status readReturn(const ReturnControl* ret) noexcept {
    const uint8_t code = detail::loadOnce(ret->status);
    const uint32_t tail = detail::loadOnce(ret->resultTail);
    if (const uint32_t released = detail::loadOnce(ret->releasedId); released != 0) [[unlikely]] {
      lb_->releaseCallback(released);
    }
    if (code != 0) [[unlikely]] return lb_->callError(lane_->index, code, tail);
    // The procedure has no result tail: a server that writes one breaks the protocol.
    if (detail::loadOnce(ret->resultFlags) != 0 || tail != 0) [[unlikely]] {
      return Status(Errc::kBadFrame, "a result tail for a call that has none");
    }
    return {};
  }

  const Binding& binding_;
  Duration timeout_;
  LocalBinding* lb_ = nullptr;
  detail::AStackCache::Lane* lane_ = nullptr;  // null: not ready
  LocalBinding::Slot* slot_ = nullptr;
  const ProcedureLayout* layout_ = nullptr;
  uint32_t procedure_ = 0;
  bool abandoned_ = false;  // the wait gave up: the A-stack leaves the lane
};

static_assert(Call<PlainCall>);

}  // namespace lrpc
