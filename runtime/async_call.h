// The generated async methods' side of runtime/pending.h: one call in flight over a LocalCall
// (an A-stack it keeps until the call completes) or a RemoteCall (a channel's window slot),
// running the method's generated copy code in two halves: `in` (copy the arguments into the
// frame, before the call starts) and `out` (copy the results out, once it has completed).
#pragma once

#include <memory>
#include <new>
#include <optional>
#include <utility>

#include "runtime/capability.h"
#include "runtime/local_call.h"
#include "runtime/pending.h"
#include "runtime/remote_call.h"

namespace lrpc::detail {

template <class T, class Call, class Out>
class AsyncCall final : public AsyncResult<T> {
 public:
  template <class In>
  AsyncCall(std::shared_ptr<Binding> binding, uint32_t procedure, const CallOptions& options, CompletionState* queue,
            In& in, Out out)
      : binding_(std::move(binding)), caps_(*binding_), out_(std::move(out)) {
    Reclaim reclaim;
    if (queue != nullptr) reclaim = {[](void* q) { static_cast<CompletionState*>(q)->reclaim(); }, queue};
    call_.emplace(*binding_, procedure, options, typename Call::Async{}, reclaim);
    Status s = call_->status();
    if (s.isOk()) s = in(*call_, caps_);
    if (s.isOk()) s = call_->start();
    if (!s.isOk()) finish(T(std::move(s)));
  }
  // A call still in flight is cancelled: its A-stack or slot is let go safely.
  ~AsyncCall() override {
    if (call_) call_->cancel();
  }
  AsyncCall(const AsyncCall&) = delete;
  AsyncCall& operator=(const AsyncCall&) = delete;

  bool advance(int64_t untilNs) noexcept override {
    if (!call_) return true;
    std::optional<Status> s = call_->await(untilNs);
    if (!s) return false;
    if (!s->isOk()) {
      finish(T(std::move(*s)));
      return true;
    }
    try {
      finish(out_(*call_, caps_));
    } catch (...) {  // out of memory copying a result value out
      finish(T(Status(Errc::kResourceExhausted, "out of memory copying the results out")));
    }
    return true;
  }

  void cancel() noexcept override {
    // A call that has completed keeps its result, even if nobody had looked yet.
    if (!call_ || advance(0)) return;
    call_->cancel();
    finish(T(Status(Errc::kCancelled, "the caller cancelled the call")));
  }

 private:
  // The Call goes at once: its A-stack (or window slot) is free for the next call even while
  // the result waits for its taker.
  void finish(T value) noexcept {
    this->finishWith(std::move(value));
    call_.reset();
  }

  std::shared_ptr<Binding> binding_;  // keeps the path alive while the call is in flight
  ClientCaps caps_;                   // capabilities this call passes and receives
  Out out_;
  std::optional<Call> call_;          // while in flight
};

// Starts `procedure` on `binding` for a generated async method: in(call, caps) writes the
// arguments, out(call, caps) reads the results once the call has completed.
template <class T, class In, class Out>
Pending<T> startAsync(const std::shared_ptr<Binding>& binding, uint32_t procedure, const CallOptions& options,
                      const std::shared_ptr<CompletionState>& queue, In&& in, Out out) {
  std::unique_ptr<AsyncResult<T>> op;
  if (binding->remote) [[unlikely]] {
    op.reset(new (std::nothrow) AsyncCall<T, RemoteCall, Out>(binding, procedure, options, queue.get(), in, std::move(out)));
  } else {
    op.reset(new (std::nothrow) AsyncCall<T, LocalCall, Out>(binding, procedure, options, queue.get(), in, std::move(out)));
  }
  if (!op) op.reset(new FailedCall<T>(Status(Errc::kResourceExhausted, "out of memory for an asynchronous call")));
  return Pending<T>(std::move(op), queue);
}

}  // namespace lrpc::detail
