#include "runtime/astack_cache.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/transfer.h"

namespace lrpc::detail {

namespace {
long membarrier(int cmd) noexcept { return ::syscall(SYS_membarrier, cmd, 0, 0); }
}  // namespace

bool enableProcessBarrier() noexcept {
  // Idempotent: every binding asks, the first registers the process.
  return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}

void AStackCache::init(uint32_t astacks, bool enabled) {
  // Half at most: the other half stays in the pool, so that threads without a lane rarely
  // find it empty and pay a revoke.
  laneCount_ = enabled ? astacks / 2 : 0;
  if (laneCount_ != 0) lanes_ = std::make_unique<Lane[]>(laneCount_);
}

bool AStackCache::install(Lane& lane, uint32_t index, uintptr_t self) noexcept {
  if ((self & kStateMask) != 0 || self == 0) return false;
  uintptr_t expected = 0;
  // Acquire: a free lane's index may have been read by the revoker that freed it.
  if (!lane.word.compare_exchange_strong(expected, kRevoked, std::memory_order_acquire)) return false;
  // Held as "revoked" by nobody while it is filled: no owner matches it, no revoker takes it.
  lane.index = index;
  // Relaxed: only this thread writes inCall from here on, and the release below publishes it.
  lane.inCall.store(0, std::memory_order_relaxed);
  // Release: a revoker that sees the owner reads the index written above.
  lane.word.store(self | kCached, std::memory_order_release);
  return true;
}

void AStackCache::drop(Lane& lane) noexcept {
  // Held as "revoked" by nobody while it is emptied, as in install. A revoker holding the lane
  // sees the call's mark and gives it back within its barrier: wait for that.
  for (;;) {
    uintptr_t word = lane.word.load(std::memory_order_relaxed);
    if ((word & kStateMask) == kCached &&
        lane.word.compare_exchange_weak(word, kRevoked, std::memory_order_relaxed)) {
      break;
    }
    cpuRelax();
  }
  // Cleared before the lane is free: a later owner's mark must not be overwritten by ours.
  lane.inCall.store(0, std::memory_order_relaxed);
  // Release: the next installer's acquire orders its writes after ours.
  lane.word.store(0, std::memory_order_release);
}

uint32_t AStackCache::revoke() noexcept {
  for (uint32_t i = 0; i < laneCount_; ++i) {
    Lane& lane = lanes_[i];
    uintptr_t word = lane.word.load(std::memory_order_relaxed);
    if ((word & kStateMask) != kCached) continue;
    const uintptr_t revoked = (word & ~kStateMask) | kRevoked;
    // Acquire: pairs with install's release; the lane's index is the owner's.
    if (!lane.word.compare_exchange_strong(word, revoked, std::memory_order_acquire)) continue;
    // Every thread of the process passes a full barrier: an owner that marked inCall before it
    // has the mark visible now, and one that marks after it sees "revoked" on its second look.
    if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) {
      // Release: gives the lane back as it was (the owner may have seen it revoked and kept off).
      lane.word.store(word, std::memory_order_release);
      return kNone;
    }
    // Acquire: pairs with the owner's release of its last call; its writes to the A-stack are seen.
    if (lane.inCall.load(std::memory_order_acquire) != 0) {
      // The owner is in a call on it: the lane goes back to it untouched.
      lane.word.store(word, std::memory_order_release);
      continue;
    }
    const uint32_t index = lane.index;
    // Release: the next installer's acquire orders its index after our read of this one.
    lane.word.store(0, std::memory_order_release);
    return index;
  }
  return kNone;
}

}  // namespace lrpc::detail
