// Mutex and MutexLock: std::mutex with clang's thread-safety annotations, so that "guarded by"
// is checked by the compiler (-Wthread-safety, an error in CI's clang builds) instead of
// being a comment. Under other compilers the annotations expand to nothing.
//
//   Mutex mu_;
//   std::vector<int> items_ LRPC_GUARDED_BY(mu_);
//   void addLocked(int v) LRPC_REQUIRES(mu_);
//   { MutexLock lock(mu_); items_.push_back(1); }
//   CondVar changed_;  while (items_.empty()) changed_.wait(mu_);  (mu_ held)
//   Guarded<int> count;  count.get(mu_) += 1;  (in a part that cannot name mu_; mu_ held)
//   WrittenUnder<bool> busy_;  busy_.store(mu_, true, order);  (mu_ held; load() by anyone)
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define LRPC_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define LRPC_THREAD_ANNOTATION(x)
#endif

#define LRPC_CAPABILITY(name) LRPC_THREAD_ANNOTATION(capability(name))
#define LRPC_SCOPED_CAPABILITY LRPC_THREAD_ANNOTATION(scoped_lockable)
#define LRPC_GUARDED_BY(mu) LRPC_THREAD_ANNOTATION(guarded_by(mu))
#define LRPC_PT_GUARDED_BY(mu) LRPC_THREAD_ANNOTATION(pt_guarded_by(mu))
#define LRPC_REQUIRES(...) LRPC_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define LRPC_EXCLUDES(...) LRPC_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define LRPC_ACQUIRE(...) LRPC_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define LRPC_RELEASE(...) LRPC_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define LRPC_TRY_ACQUIRE(...) LRPC_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define LRPC_NO_THREAD_SAFETY_ANALYSIS LRPC_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace lrpc {

class LRPC_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() LRPC_ACQUIRE() { mu_.lock(); }
  void unlock() LRPC_RELEASE() { mu_.unlock(); }
  bool tryLock() LRPC_TRY_ACQUIRE(true) { return mu_.try_lock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` for its scope.
class LRPC_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) LRPC_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() LRPC_RELEASE() {
    if (held_) mu_.unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  // Lets go before the scope ends (work that must run with no lock held comes next).
  void unlock() LRPC_RELEASE() {
    mu_.unlock();
    held_ = false;
  }

 private:
  Mutex& mu_;
  bool held_ = true;
};

// std::condition_variable for a Mutex: the caller holds `mu`, as the checker verifies. A
// condition is tested in a loop around wait(), in the caller's own code, so that the guarded
// state it reads is checked there too (a predicate lambda would be analysed apart).
class CondVar {
 public:
  void wait(Mutex& mu) LRPC_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();  // still held, by the caller
  }
  // False when `d` passed without a notification (or a spurious wake-up came at the end).
  template <class Rep, class Period>
  bool waitFor(Mutex& mu, std::chrono::duration<Rep, Period> d) LRPC_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    const bool woken = cv_.wait_for(lock, d) == std::cv_status::no_timeout;
    lock.release();
    return woken;
  }
  void notifyOne() noexcept { cv_.notify_one(); }
  void notifyAll() noexcept { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

// A value guarded by a lock that its holder cannot name (the lock of the object that owns it,
// say, where GUARDED_BY has no way to refer to it): every access names the lock, and the
// checker verifies that the caller holds it.
template <class T>
class Guarded {
 public:
  T& get([[maybe_unused]] const Mutex& mu) LRPC_REQUIRES(mu) { return value_; }

 private:
  T value_{};
};

// An atomic that only a lock's holder writes and anyone may read (a flag for other threads
// to watch): every store names the lock, and the checker verifies that the caller holds it.
template <class T>
class WrittenUnder {
 public:
  T load(std::memory_order order) const noexcept { return value_.load(order); }
  void store([[maybe_unused]] const Mutex& mu, T v, std::memory_order order) noexcept LRPC_REQUIRES(mu) {
    value_.store(v, order);
  }

 private:
  std::atomic<T> value_{};
};

}  // namespace lrpc
