#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <list>
#include <string>
#include <thread>

#include "runtime/base/fd.h"
#include "runtime/base/mutex.h"
#include "runtime/pending.h"
#include "runtime/transfer.h"

namespace lrpc::detail {

namespace {
// A thread that waits for a queue's calls blocks on one of them at most this long before it
// looks at the others again: a later call that completes first waits at most this long to be
// noticed (calls on one queue usually complete in the order they started).
constexpr int64_t kDriveSliceNs = 1'000'000;

class CompletionQueue final : public CompletionState {
 public:
  CompletionQueue() = default;
  CompletionQueue(const CompletionQueue&) = delete;
  CompletionQueue& operator=(const CompletionQueue&) = delete;
  ~CompletionQueue() override;

  void enlist(AsyncOp* op) override;
  void adopt(std::unique_ptr<AsyncOp> op, std::unique_ptr<Continuation> done) override;
  void watch(AsyncOp* op, std::coroutine_handle<> waiter) override;
  void forget(AsyncOp* op) noexcept override;
  bool advance(AsyncOp* op, int64_t untilNs) noexcept override;
  void cancel(AsyncOp* op) noexcept override;
  void reclaim() noexcept override;
  size_t poll() override;
  size_t run(Duration timeout) override;
  size_t size() const noexcept override;
  Result<int> fd() noexcept override;
  void stop() noexcept override;

 private:
  struct Entry {
    std::unique_ptr<AsyncOp> owned;      // then()
    AsyncOp* op = nullptr;
    std::unique_ptr<Continuation> done;  // then()
    std::coroutine_handle<> waiter;      // co_await
    bool driving = false;                // a thread drives op outside mu_
    bool continues() const noexcept { return done || waiter; }
  };
  // The entry of `op`, once no thread drives it; end() if there is none.
  std::list<Entry>::iterator settled(AsyncOp* op) LRPC_REQUIRES(mu_);
  // Drives `e` until `untilNs` off the lock; mu_ held on entry and on return.
  bool drive(Entry& e, int64_t untilNs) LRPC_REQUIRES(mu_);
  // Completed entries with a continuation (not driven by anyone), moved out of the list.
  std::list<Entry> takeCompleted() LRPC_REQUIRES(mu_);
  // Looks at every call that nobody drives once, without waiting.
  void lookAll() LRPC_REQUIRES(mu_);
  // Drives the first entry that needs it until `untilNs`; false if there was none.
  bool driveOne(int64_t untilNs) LRPC_REQUIRES(mu_);
  void waiterLoop() noexcept;
  void signal() noexcept LRPC_REQUIRES(mu_);

  mutable Mutex mu_;
  CondVar changed_;  // an entry was added, or stopped being driven, or stop_ set
  std::list<Entry> entries_ LRPC_GUARDED_BY(mu_);
  bool stop_ LRPC_GUARDED_BY(mu_) = false;
  bool signalled_ LRPC_GUARDED_BY(mu_) = false;  // the eventfd holds a count poll() has not read
  OwnedFd event_ LRPC_GUARDED_BY(mu_);  // fd(): the eventfd
  std::thread waiter_;   // started by fd()
};

}  // namespace

std::shared_ptr<CompletionState> CompletionState::make() { return std::make_shared<CompletionQueue>(); }

CompletionQueue::~CompletionQueue() { stop(); }

void CompletionQueue::stop() noexcept {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  changed_.notifyAll();
  if (waiter_.joinable()) waiter_.join();
  // Calls handed over with then() go with the queue (their destructors cancel them), outside
  // the lock: nothing can run their continuations any more.
  std::list<Entry> dropped;
  {
    MutexLock lock(mu_);
    for (auto it = entries_.begin(); it != entries_.end();) {
      auto next = std::next(it);
      if (it->owned && !it->driving) dropped.splice(dropped.end(), entries_, it);
      it = next;
    }
  }
}

void CompletionQueue::enlist(AsyncOp* op) {
  {
    MutexLock lock(mu_);
    entries_.push_back(Entry{nullptr, op, {}, {}, false});
  }
  changed_.notifyAll();
}

std::list<CompletionQueue::Entry>::iterator CompletionQueue::settled(AsyncOp* op) {
  for (;;) {
    auto it = entries_.begin();
    while (it != entries_.end() && it->op != op) ++it;
    if (it == entries_.end() || !it->driving) return it;
    changed_.wait(mu_);
  }
}

void CompletionQueue::adopt(std::unique_ptr<AsyncOp> op, std::unique_ptr<Continuation> done) {
  {
    MutexLock lock(mu_);
    auto it = settled(op.get());
    if (it == entries_.end()) it = entries_.insert(entries_.end(), Entry{nullptr, op.get(), {}, {}, false});
    it->owned = std::move(op);
    it->done = std::move(done);
  }
  changed_.notifyAll();
}

void CompletionQueue::watch(AsyncOp* op, std::coroutine_handle<> waiter) {
  {
    MutexLock lock(mu_);
    auto it = settled(op);
    if (it == entries_.end()) it = entries_.insert(entries_.end(), Entry{nullptr, op, {}, {}, false});
    it->waiter = waiter;
  }
  changed_.notifyAll();
}

void CompletionQueue::forget(AsyncOp* op) noexcept {
  MutexLock lock(mu_);
  auto it = settled(op);
  // None: poll() took it to resume the coroutine, which is now taking its result.
  if (it != entries_.end()) entries_.erase(it);
}

bool CompletionQueue::drive(Entry& e, int64_t untilNs) {
  // Off the lock: the wait may be long, and other threads poll, add and remove meanwhile.
  // The entry stays put: nobody removes or drives an entry marked as driven.
  e.driving = true;
  mu_.unlock();
  const bool done = e.op->advance(untilNs);
  mu_.lock();
  e.driving = false;
  changed_.notifyAll();
  return done;
}

bool CompletionQueue::advance(AsyncOp* op, int64_t untilNs) noexcept {
  MutexLock lock(mu_);
  auto it = settled(op);
  if (it == entries_.end() || it->op->complete()) return op->complete();
  return drive(*it, untilNs);
}

void CompletionQueue::cancel(AsyncOp* op) noexcept {
  MutexLock lock(mu_);
  auto it = settled(op);
  if (it == entries_.end()) return;
  it->driving = true;
  mu_.unlock();
  op->cancel();
  mu_.lock();
  it->driving = false;
  changed_.notifyAll();
}

void CompletionQueue::lookAll() {
  for (Entry& e : entries_) {
    if (!e.driving && !e.op->complete()) (void)e.op->advance(0);
  }
}

void CompletionQueue::reclaim() noexcept {
  MutexLock lock(mu_);
  lookAll();
}

std::list<CompletionQueue::Entry> CompletionQueue::takeCompleted() {
  std::list<Entry> done;
  for (auto it = entries_.begin(); it != entries_.end();) {
    auto next = std::next(it);
    if (!it->driving && it->continues() && it->op->complete()) done.splice(done.end(), entries_, it);
    it = next;
  }
  return done;
}

size_t CompletionQueue::poll() {
  std::list<Entry> ready;
  {
    MutexLock lock(mu_);
    if (signalled_) {
      uint64_t count;
      (void)!::read(event_.get(), &count, sizeof count);  // empties it: poll() runs what is done
      signalled_ = false;
    }
    lookAll();
    ready = takeCompleted();
  }
  size_t ran = 0;
  while (!ready.empty()) {
    // Out of the list before it runs: a resumed coroutine's forget() then finds nothing.
    std::list<Entry> one;
    one.splice(one.end(), ready, ready.begin());
    ++ran;
    try {
      if (one.front().waiter) {
        one.front().waiter.resume();
      } else {
        one.front().done->run();
      }
    } catch (...) {
      // The continuations not run yet stay queued for the next poll().
      MutexLock lock(mu_);
      entries_.splice(entries_.begin(), ready);
      throw;
    }
  }
  return ran;
}

bool CompletionQueue::driveOne(int64_t untilNs) {
  auto it = entries_.begin();
  while (it != entries_.end() && (it->driving || it->op->complete())) ++it;
  if (it == entries_.end()) return false;
  (void)drive(*it, untilNs);
  return true;
}

size_t CompletionQueue::run(Duration timeout) {
  const int64_t until = monotonicNs() + (timeout.count() > 0 ? timeout.count() : 0);
  for (;;) {
    if (size_t ran = poll(); ran != 0) return ran;
    MutexLock lock(mu_);
    const int64_t now = monotonicNs();
    if (entries_.empty() || now >= until) return 0;
    const int64_t slice = until - now < kDriveSliceNs ? until : now + kDriveSliceNs;
    if (!driveOne(slice)) {
      // Every open call is driven by another thread (or has completed, waiting for its
      // taker): wait for a change.
      changed_.waitFor(mu_, std::chrono::nanoseconds(slice - now));
    }
  }
}

size_t CompletionQueue::size() const noexcept {
  MutexLock lock(mu_);
  return entries_.size();
}

void CompletionQueue::signal() noexcept {
  if (signalled_ || !event_.valid()) return;
  const uint64_t one = 1;
  (void)!::write(event_.get(), &one, sizeof one);
  signalled_ = true;
}

Result<int> CompletionQueue::fd() noexcept {
  MutexLock lock(mu_);
  if (event_.valid()) return event_.get();
  if (stop_) return Status(Errc::kCancelled, "the completion queue is stopped");
  OwnedFd event(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!event.valid()) return Status::fromErrno(errno, "eventfd");
  event_ = std::move(event);
  try {
    waiter_ = std::thread([this] { waiterLoop(); });
  } catch (...) {
    event_ = OwnedFd();
    return Status(Errc::kResourceExhausted, "cannot start the completion queue's thread");
  }
  return event_.get();
}

void CompletionQueue::waiterLoop() noexcept {
  mu_.lock();
  while (!stop_) {
    lookAll();
    bool open = false;
    for (Entry& e : entries_) {
      if (e.driving) continue;
      if (!e.op->complete()) {
        open = true;
      } else if (e.continues()) {
        signal();
      }
    }
    if (!open) {
      changed_.wait(mu_);  // until a call is added or let go by another thread, or stop
      continue;
    }
    (void)driveOne(monotonicNs() + kDriveSliceNs);
  }
  mu_.unlock();
}

}  // namespace lrpc::detail
