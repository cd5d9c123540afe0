// Asynchronous calls: what a generated `client.async().method(...)` returns, and the queue
// that completes such calls from the application's own loop.
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

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
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
