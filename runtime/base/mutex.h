// Mutex and MutexLock: std::mutex with clang's thread-safety annotations, so that "guarded by"
// is checked by the compiler (-Wthread-safety, an error in CI's clang builds) instead of
// being a comment. Under other compilers the annotations expand to nothing.
//
//   Mutex mu_;
//   std::vector<int> items_ LRPC_GUARDED_BY(mu_);
//   void addLocked(int v) LRPC_REQUIRES(mu_);
//   { MutexLock lock(mu_); items_.push_back(1); }
#pragma once

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
#define LRPC_NO_THREAD_SAFETY_ANALYSIS LRPC_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace lrpc {

class LRPC_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() LRPC_ACQUIRE() { mu_.lock(); }
  void unlock() LRPC_RELEASE() { mu_.unlock(); }

 private:
  std::mutex mu_;
};

// Holds `mu` for its scope.
class LRPC_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) LRPC_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() LRPC_RELEASE() { mu_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

}  // namespace lrpc
