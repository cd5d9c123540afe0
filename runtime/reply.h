// Deferred replies: a handler of a method marked $Lrpc.deferred gets an lrpc::Reply<T> instead
// of returning its answer, and may answer through it later, from any thread (idl/README.md,
// "Deferred replies"). Part of the generated-code contract; included by stub_support.h.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

#include "runtime/base/status.h"

namespace lrpc {

class ServerCall;

// What a path keeps of a call whose handler returned before answering (ServerCall::defer):
// enough to write the results and wake the caller later. Every path implements it.
class DeferredCall {
 public:
  // Writes a method's results into `call` (the generated writer, given the handler's value).
  using Writer = Status (*)(ServerCall& call, void* value) noexcept;

  virtual ~DeferredCall() = default;
  // Answers the call, once: when `status` is ok, `write(call, value)` fills the call's result
  // memory (null: no results) and its status is the answer; otherwise `status` is. Does nothing
  // when the caller's connection has gone meanwhile (the answer has nobody to go to).
  virtual void finish(Status status, Writer write, void* value) noexcept = 0;
  // Whether the caller has given up on the call (ServerCall::cancelled).
  virtual bool cancelled() const noexcept = 0;
};

namespace detail {

// The race between a deferred call's answer and the end of its dispatch: an answer may come
// while the handler still runs, and the call's memory is the dispatching thread's until then.
// Whichever of the two comes second publishes the answer. Each path's deferred call keeps one.
class DeferRace {
 public:
  // A call is deferred (before its Reply leaves dispatch). Relaxed: the Reply reaches whoever
  // answers through the handler's own synchronization.
  void start() noexcept { phase_.store(kDispatching, std::memory_order_relaxed); }
  // The answer is written: true if dispatch had ended, so that the answerer publishes.
  // Acq_rel: hands the answer's writes to the dispatching thread, or takes its hand-back.
  bool answered() noexcept { return phase_.exchange(kAnswered, std::memory_order_acq_rel) == kHandedBack; }
  // Dispatch has ended: true if the answer came meanwhile, so that this thread publishes.
  // Acq_rel: takes the answer's writes, or hands the call's memory to the answer to come.
  bool handBack() noexcept { return phase_.exchange(kHandedBack, std::memory_order_acq_rel) == kAnswered; }
  // Dispatch has ended and no answer has come. Acquire: pairs with handBack's release.
  bool waiting() const noexcept { return phase_.load(std::memory_order_acquire) == kHandedBack; }

 private:
  enum : uint8_t { kDispatching, kAnswered, kHandedBack };
  std::atomic<uint8_t> phase_{kDispatching};
};

// The pieces of Reply that do not depend on T.
class ReplyBase {
 public:
  ReplyBase(ReplyBase&&) noexcept = default;
  ReplyBase& operator=(ReplyBase&& o) noexcept {
    if (this != &o) {
      dropped();
      call_ = std::move(o.call_);
      method_ = o.method_;
    }
    return *this;
  }
  ReplyBase(const ReplyBase&) = delete;
  ReplyBase& operator=(const ReplyBase&) = delete;

  // Still to be answered (not sent, failed or moved from).
  explicit operator bool() const noexcept { return call_ != nullptr; }
  // Whether the caller has given up (cancelled, dropped its Pending, passed its deadline): the
  // answer then goes nowhere, and the handler may stop working on it.
  bool cancelled() const noexcept { return call_ != nullptr && call_->cancelled(); }
  // Answers with an error. An ok `status` is a bug in the caller (checked in debug builds); it
  // is sent as kServerFault.
  void fail(Status status) noexcept {
    LRPC_DCHECK(!status.isOk(), "Reply::fail given an ok Status");
    if (status.isOk()) status = Status(Errc::kServerFault, "Reply::fail given an ok Status");
    finish(std::move(status), nullptr, nullptr);
  }

 protected:
  ReplyBase(std::unique_ptr<DeferredCall> call, const char* method) noexcept : call_(std::move(call)), method_(method) {}
  ~ReplyBase() { dropped(); }

  void finish(Status status, DeferredCall::Writer write, void* value) noexcept {
    LRPC_CHECK(call_ != nullptr, "a Reply answered twice (or after it was moved from)");
    std::unique_ptr<DeferredCall> call = std::move(call_);
    call->finish(std::move(status), write, value);
  }

 private:
  // Dropped unanswered: the caller must not wait forever.
  void dropped() noexcept;

  std::unique_ptr<DeferredCall> call_;
  const char* method_;  // "Sensor.read", for the error a dropped reply sends
};

}  // namespace detail

// The answer to one deferred call, to be given exactly once: send() with the results, or
// fail() with an error. Movable, not copyable; answer it from any thread. One dropped without
// an answer answers kServerFault, so that no caller waits forever. `T` is what the method's
// handler would otherwise return in its Result (void for a method with no results).
template <class T>
class Reply : public detail::ReplyBase {
 public:
  using WriteFn = Status (*)(ServerCall& call, T& value);

  Reply(std::unique_ptr<DeferredCall> call, WriteFn write, const char* method) noexcept
      : ReplyBase(std::move(call), method), write_(write) {}

  // Answers with `value`, written by the generated code as a returned value would be.
  void send(T value) noexcept {
    Pending p{write_, &value};
    finish({}, &Pending::run, &p);
  }
  // Answers with a handler-style result: its value, or its error.
  void settle(Result<T> result) noexcept {
    if (result.isOk()) {
      send(std::move(result.value()));
    } else {
      fail(result.status());
    }
  }

 private:
  struct Pending {
    WriteFn write;
    T* value;
    static Status run(ServerCall& call, void* p) noexcept {
      auto* self = static_cast<Pending*>(p);
      try {  // the writer's copies allocate
        return self->write(call, *self->value);
      } catch (...) {
        return Status(Errc::kResourceExhausted, "out of memory writing a deferred reply");
      }
    }
  };
  WriteFn write_;
};

template <>
class Reply<void> : public detail::ReplyBase {
 public:
  Reply(std::unique_ptr<DeferredCall> call, const char* method) noexcept : ReplyBase(std::move(call), method) {}

  // Answers with success (the method has no results).
  void send() noexcept { finish({}, nullptr, nullptr); }
  void settle(Status status) noexcept {
    if (status.isOk()) {
      send();
    } else {
      fail(std::move(status));
    }
  }
};

}  // namespace lrpc
