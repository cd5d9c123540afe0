// A per-thread cache of A-stacks for one procedure of a LocalBinding (LRPC's own answer to the
// pool's locked instruction): a thread that calls a procedure again and again keeps "its"
// A-stack between calls, and takes and returns it with plain loads and stores.
//
// The cache is a few lanes (half the procedure's A-stacks at most, so that the rest always
// stays in the shared pool); a thread uses the lane its thread pointer hashes to, if no other
// thread holds it. A lane's word holds its owner (the thread pointer) and a state:
//   free (0) --install: CAS, by a thread that owns an A-stack--> cached
//   cached --revoke: CAS, by a thread that found the pool empty--> revoked
//   revoked --the owner was idle--> free (the revoker keeps the A-stack)
//   revoked --the owner was in a call on it--> cached again (the revoker gives up)
// An owner's call marks the lane's inCall word with plain stores, and checks the word once
// more after the mark; the revoker checks inCall after a process-wide barrier (membarrier),
// so that of the two, at least one sees the other (asymmetric Dekker): an owner never uses an
// A-stack a revoker took, and the owner's side pays no fence. The lanes of a thread that has
// gone are taken back the same way, when the pool runs dry.
//
// Without membarrier (old kernel, or a seccomp filter that forbids it) the cache stays off
// and every call uses the pool.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "runtime/astack.h"

namespace lrpc::detail {

// A word unique to the calling thread among live threads (its thread control block), nonzero,
// with its two low bits clear; a new thread may reuse the word of one that has exited.
inline uintptr_t threadSelf() noexcept {
#if defined(__x86_64__)
  uintptr_t self;
  asm("mov %%fs:0, %0" : "=r"(self));  // the TCB's pointer to itself (x86-64 TLS ABI)
  return self;
#else
  return reinterpret_cast<uintptr_t>(__builtin_thread_pointer());
#endif
}

// Registers this process for membarrier's private expedited barrier; false when the kernel
// refuses (then AStackCache stays off).
bool enableProcessBarrier() noexcept;

class AStackCache {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  struct Lane {
    // Owner's thread pointer | state; read on every call of a thread without a lane, written
    // only on install and revoke: a line of its own, which stays shared between cores.
    alignas(kCacheLine) std::atomic<uintptr_t> word{0};
    uint32_t index = kNone;  // the cached A-stack; written before the word publishes it
    // 1 while the owner runs a call on the cached A-stack; written only by the owner, on every
    // call: a line of its own, so that threads reading `word` never fight it.
    alignas(kCacheLine) std::atomic<uint32_t> inCall{0};
  };

  AStackCache() = default;
  AStackCache(const AStackCache&) = delete;
  AStackCache& operator=(const AStackCache&) = delete;

  // A cache for a procedure of `astacks` A-stacks; off when !enabled or astacks < 2.
  void init(uint32_t astacks, bool enabled);

  // The A-stack cached for thread `self`, now marked in a call (end it with finish()), or
  // null when this thread has none free here.
  Lane* take(uintptr_t self) noexcept {
    if (laneCount_ == 0) return nullptr;
    Lane& lane = laneOf(self);
    if (lane.word.load(std::memory_order_relaxed) != (self | kCached)) return nullptr;
    // Only the owner writes inCall; a nested call of the same thread finds it already set.
    if (lane.inCall.load(std::memory_order_relaxed) != 0) return nullptr;
    lane.inCall.store(1, std::memory_order_relaxed);
    // Compiler-only fence: the store above may still sit in this core's store buffer when the
    // word is read again; a revoker's membarrier drains it before the revoker reads inCall.
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (lane.word.load(std::memory_order_relaxed) != (self | kCached)) [[unlikely]] {
      // Being revoked: the revoker sees the mark and gives the lane back, or took the A-stack.
      // Release: pairs with the revoker's acquire, after which it may own the A-stack.
      lane.inCall.store(0, std::memory_order_release);
      return nullptr;
    }
    return &lane;
  }

  // The call on a lane's A-stack is over; the A-stack stays cached.
  static void finish(Lane& lane) noexcept {
    // Release: a revoker that reads 0 takes the A-stack and must see this call's writes to it.
    lane.inCall.store(0, std::memory_order_release);
  }

  // The call on a lane's A-stack ends without giving it back to the lane (it stays out of
  // every list, abandoned to a late return): the lane is emptied instead. Any thread may end
  // the call (an asynchronous one may be awaited elsewhere).
  static void drop(Lane& lane) noexcept;

  // Caches A-stack `index` (owned by the caller, whose call on it is over) for thread `self`;
  // false when its lane is taken (then the caller returns it to the pool).
  bool keep(uint32_t index, uintptr_t self) noexcept {
    if (laneCount_ == 0) return false;
    Lane& lane = laneOf(self);
    // A plain look first: a thread whose lane another holds pays no locked instruction.
    if (lane.word.load(std::memory_order_relaxed) != 0) return false;
    return install(lane, index, self);
  }

  // An A-stack taken from a lane whose owner is not in a call on it (a thread that has gone,
  // or an idle one): for a caller that found the pool empty. kNone if there is none.
  uint32_t revoke() noexcept;

  uint32_t lanes() const noexcept { return laneCount_; }

 private:
  static constexpr uintptr_t kCached = 1;
  static constexpr uintptr_t kRevoked = 2;
  static constexpr uintptr_t kStateMask = 3;

  Lane& laneOf(uintptr_t self) noexcept {
    // Thread pointers lie pages apart: mix the high bits down, then scale the top 32 bits of
    // the mix to [0, laneCount_) with a multiply, which costs a call a cycle where a division
    // (%) costs it a dozen or more.
    const uint64_t mixed = (uint64_t{self} * 0x9E3779B97F4A7C15ull) >> 32;
    return lanes_[(mixed * laneCount_) >> 32];
  }
  bool install(Lane& lane, uint32_t index, uintptr_t self) noexcept;

  uint32_t laneCount_ = 0;
  std::unique_ptr<Lane[]> lanes_;
};

}  // namespace lrpc::detail
