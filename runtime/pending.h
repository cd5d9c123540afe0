// Answers that come later, on both sides of a call. The client's: what a generated
// `client.async().method(...)` returns, and the queue that completes such calls from the
// application's own loop. The server's: the lrpc::Reply<T> a handler of a method marked
// $Lrpc.deferred answers through, now or later, from any thread (idl/README.md, "Deferred
// replies"), and DeferredCall, what each path keeps of such a call (at the end of this file).
//
// A Pending<T> (T is the synchronous method's return type, Status or Result<V>) is one call
// in flight. Its arguments were copied when the call started, so the caller's values are free
// at once. It is completed by whoever drives it:
//   * the caller, with ready() (one look, never blocks) or wait() (blocks, the call's deadline
//     applies), or `co_await` when it has no queue (then the coroutine waits in place);
//   * a Completions queue, when the call was started with one (`client.async(queue)`): `co_await`
//     suspends the coroutine until queue.poll() resumes it, and then(fn) runs fn from poll().
// Destroying a Pending that has not completed cancels its call (cancel()).
//
// Nothing here owns a thread of the application: poll() runs completions on the thread that
// calls it. Only Completions::fd() starts a thread of lrpc's own, which waits for the calls
// and makes the fd readable; it runs no user code.
#pragma once

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "runtime/base/duration.h"
#include "runtime/base/status.h"

namespace lrpc {

namespace detail {

// What a call that waits for a free A-stack runs now and then meanwhile
// (LocalBinding::acquireSlow): an asynchronous call's queue completes the calls its thread
// holds, so that their A-stacks come back (CompletionState::reclaim). Nothing for a
// synchronous call.
struct Reclaim {
  void (*fn)(void*) = nullptr;
  void* context = nullptr;
};

// One asynchronous call, whatever its path and result type. Driven by one thread at a time.
class AsyncOp {
 public:
  virtual ~AsyncOp() = default;
  // Drives the call, waiting until `untilNs` (monotonic) at most, 0: only a look. True once it
  // has completed: its result is then ready, and its A-stack or window slot already free.
  virtual bool advance(int64_t untilNs) noexcept = 0;
  // Completes the call now with kCancelled, unless it has completed already.
  virtual void cancel() noexcept = 0;
  bool complete() const noexcept { return complete_; }

 protected:
  bool complete_ = false;
};

template <class T>
class AsyncResult : public AsyncOp {
 public:
  // The result, once: complete() must be true.
  T take() noexcept { return std::move(*result_); }

 protected:
  void finishWith(T value) noexcept {
    result_.emplace(std::move(value));
    complete_ = true;
  }
  std::optional<T> result_;
};

// A call that failed before it could start: complete from the outset.
template <class T>
class FailedCall final : public AsyncResult<T> {
 public:
  explicit FailedCall(Status s) noexcept { this->finishWith(T(std::move(s))); }
  bool advance(int64_t) noexcept override { return true; }
  void cancel() noexcept override {}
};

// What then() hands a queue: the caller's function with the call's result, run by poll().
class Continuation {
 public:
  virtual ~Continuation() = default;
  virtual void run() = 0;
};

// The shared state of a Completions queue: its entries outlive the queue object while a
// Pending started on it still exists. Every call started on the queue has an entry from start
// until its result is taken, and is driven only by a thread that marked its entry driven, so
// that the fd thread, poll() and the Pending's owner never drive one call at once. An
// interface here, its locks and thread out of line (completions.cc): generated code reaches
// this header.
class CompletionState {
 public:
  static std::shared_ptr<CompletionState> make();
  virtual ~CompletionState() = default;

  // A call started on the queue (its Pending keeps `op`).
  virtual void enlist(AsyncOp* op) = 0;
  // then(): the queue takes `op` over and runs `done` from poll() once it has completed.
  virtual void adopt(std::unique_ptr<AsyncOp> op, std::unique_ptr<Continuation> done) = 0;
  // co_await: poll() resumes `waiter` once `op` has completed.
  virtual void watch(AsyncOp* op, std::coroutine_handle<> waiter) = 0;
  // The Pending of `op` takes its result or goes away: waits until no thread drives it, then
  // forgets it.
  virtual void forget(AsyncOp* op) noexcept = 0;
  // The Pending's own ready() (0) and wait(): drives `op` unless another thread does.
  virtual bool advance(AsyncOp* op, int64_t untilNs) noexcept = 0;
  virtual void cancel(AsyncOp* op) noexcept = 0;
  // A call on the queue waits for an A-stack: completes whatever has completed, so that calls
  // this thread holds give theirs back (continuations do not run).
  virtual void reclaim() noexcept = 0;

  virtual size_t poll() = 0;
  virtual size_t run(Duration timeout) = 0;
  virtual size_t size() const noexcept = 0;
  virtual Result<int> fd() noexcept = 0;
  virtual void stop() noexcept = 0;
};

}  // namespace detail

// A completion queue the application owns, for calls started with `client.async(queue)`.
// Thread-safe; continuations run on whichever thread calls poll() or run().
class Completions {
 public:
  Completions() : state_(detail::CompletionState::make()) {}
  // Stops the fd thread. Calls handed over with then() are cancelled and their continuations
  // never run; a coroutine still suspended on the queue is never resumed (destroy it).
  ~Completions() { state_->stop(); }
  Completions(const Completions&) = delete;
  Completions& operator=(const Completions&) = delete;

  // Drives every call on the queue once without blocking, then runs the continuations of those
  // that have completed (then() callbacks, suspended coroutines), in completion order. Returns
  // how many ran. A continuation may start more calls on the queue.
  size_t poll() { return state_->poll(); }
  // As poll(), but first waits up to `timeout` for a completion, driving the calls itself.
  size_t run(Duration timeout) { return state_->run(timeout); }
  // Calls on the queue whose continuations have not run yet.
  size_t size() const noexcept { return state_->size(); }
  // A file descriptor that polls readable while a completion waits for poll(), for an epoll or
  // io_uring loop. The first call starts lrpc's waiting thread for this queue.
  Result<int> fd() noexcept { return state_->fd(); }

  const std::shared_ptr<detail::CompletionState>& state() const noexcept { return state_; }

 private:
  std::shared_ptr<detail::CompletionState> state_;
};

// One asynchronous call's result to come (see the top of this file).
template <class T>
class [[nodiscard]] Pending {
 public:
  Pending() noexcept = default;
  Pending(std::unique_ptr<detail::AsyncResult<T>> op, std::shared_ptr<detail::CompletionState> queue)
      : op_(std::move(op)), queue_(std::move(queue)) {
    if (queue_ && op_) queue_->enlist(op_.get());
  }
  Pending(Pending&& other) noexcept = default;
  Pending& operator=(Pending&& other) noexcept {
    if (this != &other) {
      release();
      op_ = std::move(other.op_);
      queue_ = std::move(other.queue_);
    }
    return *this;
  }
  ~Pending() { release(); }

  // Whether it holds a call (not default-made, moved from, taken, or handed to then()).
  bool valid() const noexcept { return op_ != nullptr; }
  // True once the result is there. Drives the call once without blocking.
  bool ready() noexcept {
    if (op_ == nullptr) return true;
    return queue_ ? queue_->advance(op_.get(), 0) : op_->complete() || op_->advance(0);
  }
  // Waits for the result (the call's deadline applies) and returns it; the Pending is empty
  // afterwards (a second wait() gives kInvalidArgument).
  T wait() noexcept {
    if (op_ == nullptr) return T(Status(Errc::kInvalidArgument, "wait() on an empty lrpc::Pending"));
    waitHere();
    return take();
  }
  // Releases the caller at once: the result becomes kCancelled (unless it had completed). The
  // server may still run the call; a same-host A-stack is reused only after it has returned.
  void cancel() noexcept {
    if (op_ == nullptr) return;
    if (queue_) {
      queue_->cancel(op_.get());
    } else {
      op_->cancel();
    }
  }
  // Hands the call to `queue`, which runs fn(result) from its poll() once the call completes
  // (on the next poll() if it has already). The Pending is empty afterwards.
  template <class F>
  void then(Completions& queue, F fn) &&;

  // co_await: on a queue, the coroutine is resumed by the queue's poll(); without one, it
  // waits here (the call still ran beside the caller's work until the co_await).
  bool await_ready() noexcept { return ready(); }
  bool await_suspend(std::coroutine_handle<> h) {
    if (!queue_) {
      waitHere();
      return false;
    }
    queue_->watch(op_.get(), h);
    return true;
  }
  T await_resume() noexcept {
    if (op_ == nullptr) return T(Status(Errc::kInvalidArgument, "co_await on an empty lrpc::Pending"));
    return take();
  }

 private:
  void waitHere() noexcept {
    if (queue_) {
      while (!queue_->advance(op_.get(), INT64_MAX)) {
      }
    } else {
      while (!op_->advance(INT64_MAX)) {
      }
    }
  }
  T take() noexcept {
    if (queue_) queue_->forget(op_.get());
    T r = op_->take();
    op_.reset();
    return r;
  }
  void release() noexcept {
    if (op_ == nullptr) return;
    if (queue_) queue_->forget(op_.get());
    op_.reset();  // cancels a call still in flight
  }

  std::unique_ptr<detail::AsyncResult<T>> op_;
  std::shared_ptr<detail::CompletionState> queue_;
};

template <class T>
template <class F>
void Pending<T>::then(Completions& queue, F fn) && {
  if (op_ == nullptr) return;
  if (queue_ && queue_ != queue.state()) queue_->forget(op_.get());
  struct Then final : detail::Continuation {
    Then(detail::AsyncResult<T>* r, F&& f) : result(r), fn(std::move(f)) {}
    void run() override { fn(result->take()); }
    detail::AsyncResult<T>* result;  // owned by the queue's entry, with this
    F fn;
  };
  detail::AsyncResult<T>* raw = op_.get();
  queue_.reset();
  queue.state()->adopt(std::move(op_), std::make_unique<Then>(raw, std::move(fn)));
}

}  // namespace lrpc

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
