// The client side of a same-host binding: the mapped A-stack region, the per-procedure
// free lists of A-stacks, and the socket to the server's clerk. What a LocalCall works on.
// Created by importBinding (runtime/import.h); owned through lrpc::Binding. Generated code
// inlines LocalCall, so this header holds what its fast path reads; the socket, the mapping
// and the locks of the slow paths are out of line (Slow, in local_binding.cc).
//
// Thread safety: any number of threads may call through one LocalBinding at once. The call
// path takes no lock: an A-stack is owned by one call from pop() to push() (or while a thread
// keeps it cached, runtime/astack_cache.h), and everything
// per-A-stack (Slot) is touched only by its current owner. The socket (first use of an
// A-stack, out-of-band segments) is serialized by Slow::sockMu, off the fast path.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>

#include "runtime/astack.h"
#include "runtime/astack_cache.h"
#include "runtime/base/duration.h"
#include "runtime/base/status.h"
#include "runtime/pending.h"
#include "runtime/transfer.h"

namespace lrpc {

struct HostedObject;  // runtime/capability.h
class OwnedFd;        // runtime/base/fd.h
class SharedMemory;   // runtime/shm.h

namespace detail {

class CallbackHost;  // runtime/callbacks.h

// A client-private LIFO free list of one procedure's A-stacks, without locks, at one locked
// instruction per call. Each A-stack has a word: 0 while a call owns it, else the stamp of its
// return (later returns get larger stamps). pop() claims a word by exchanging 0 into it (the
// one locked instruction; whoever reads a nonzero stamp back owns the A-stack), trying first
// the A-stack returned last (top_), then the free one with the largest stamp: last in, first
// out. push() is the owner's plain release store of a fresh stamp: no other thread writes a
// nonzero value into a word it does not own. A Treiber stack needs a CAS to take and another
// to return, three times the cost of this scheme's one exchange and one store.
class AStackPool {
 public:
  static constexpr uint32_t kEmpty = AStackCache::kNone;  // one "no A-stack" for both

  AStackPool() = default;
  AStackPool(const AStackPool&) = delete;
  AStackPool& operator=(const AStackPool&) = delete;

  // All `count` A-stacks from `first` on are free, `first` on top.
  void init(uint32_t first, uint32_t count);

  // A free A-stack's global index, or kEmpty.
  uint32_t pop() noexcept {
    uint32_t top = top_.load(std::memory_order_relaxed);
    if (top < count_ && claim(top)) return first_ + top;
    return popScan();
  }

  void push(uint32_t index) noexcept {
    uint32_t local = index - first_;
    // Only a hint for the next stamp: two returns racing may get the same one, and either may
    // then be taken first.
    uint64_t stamp = clock_.load(std::memory_order_relaxed) + 1;
    clock_.store(stamp, std::memory_order_relaxed);
    // Release: the next owner must see our writes to the A-stack and its Slot.
    state_[local].store(stamp, std::memory_order_release);
    top_.store(local, std::memory_order_relaxed);
  }

 private:
  bool claim(uint32_t local) noexcept {
    // The plain load first: a word seen in use costs no locked instruction.
    if (state_[local].load(std::memory_order_relaxed) == 0) return false;
    // Acquire: we take over the A-stack and must see what its previous owner wrote.
    return state_[local].exchange(0, std::memory_order_acquire) != 0;
  }
  uint32_t popScan() noexcept;

  alignas(kCacheLine) std::atomic<uint32_t> top_{0};  // local index returned last (a hint)
  uint32_t first_ = 0;
  uint32_t count_ = 0;
  std::atomic<uint64_t> clock_{0};  // the last stamp given
  std::unique_ptr<std::atomic<uint64_t>[]> state_;
};

}  // namespace detail

class LocalBinding {
 public:
  // One procedure's A-stacks: the calling thread's cached one first, else the shared pool.
  struct Proc {
    ProcedureLayout layout;
    detail::AStackPool pool;
    detail::AStackCache cache;

    // A free A-stack for the calling thread, or kEmpty; `lane` is set when it is the thread's
    // cached one (give it back with give()).
    uint32_t take(detail::AStackCache::Lane*& lane) noexcept {
      lane = cache.take(detail::threadSelf());
      return lane != nullptr ? lane->index : pool.pop();
    }
    // The slow path's try, after take() found none: the pool again, then the A-stack an idle
    // or exited thread keeps cached.
    uint32_t takeAny() noexcept {
      const uint32_t index = pool.pop();
      return index != detail::AStackPool::kEmpty ? index : cache.revoke();
    }
    // A call on `index` is over: it stays in its lane, or becomes the thread's cached one, or
    // goes back to the pool.
    void give(uint32_t index, detail::AStackCache::Lane* lane) noexcept {
      if (lane != nullptr) {
        detail::AStackCache::finish(*lane);
      } else if (!cache.keep(index, detail::threadSelf())) {
        pool.push(index);
      }
    }
  };
  // Client-private state of one A-stack; only its current owner touches it.
  struct Slot {
    AStackControl* ctl = nullptr;  // where it lies in the region
    uint32_t seq = 0;       // sequence number of the last call made on it
    bool started = false;   // the server has a thread for it
    std::unique_ptr<SharedMemory> argSegment;     // out-of-band argument tail
    std::unique_ptr<SharedMemory> resultSegment;  // out-of-band result tail
  };

  LocalBinding(const InterfaceDescriptor& iface, RegionLayout layout, SharedMemory region, OwnedFd socket,
               uint64_t key, TransferMode mode, Duration astackWait);
  ~LocalBinding();
  LocalBinding(const LocalBinding&) = delete;
  LocalBinding& operator=(const LocalBinding&) = delete;

  // ---- used by LocalCall's inline fast path ----
  bool dead() const noexcept { return dead_.load(std::memory_order_relaxed); }
  uint32_t procedureCount() const noexcept { return procedureCount_; }
  Proc& procedure(uint32_t p) noexcept { return procs_[p]; }
  AStackControl* control(uint32_t index) const noexcept {
    return reinterpret_cast<AStackControl*>(base_ + layout_.astackOffset(index));
  }
  ReturnControl* returnControl(uint32_t index) const noexcept {
    return reinterpret_cast<ReturnControl*>(base_ + layout_.returnOffset(index));
  }
  Slot& slot(uint32_t index) noexcept { return slots_[index]; }
  // The start of A-stack `index`'s argument segment (after argOutOfBand succeeded).
  const std::byte* argSegmentBase(uint32_t index) const noexcept;
  uint64_t key() const noexcept { return key_; }
  TransferMode mode() const noexcept { return mode_; }
  // This binding has passed callbacks, so its synchronous callers run the callbacks their calls
  // cause while they wait (runtime/callbacks.h): LocalCall waits with waitReturnAsGuest.
  bool servesCallbacks() const noexcept { return guest_.load(std::memory_order_relaxed); }
  // A callback binding (the server's side of a client's callbacks): its calls name the forward
  // call they serve, and ring with ringReverse.
  bool reverse() const noexcept { return reverseOf_ != nullptr; }

  // ---- slow paths, out of line ----
  // Waits for a free A-stack of procedure p: up to the import's astackWait (then
  // kResourceExhausted), or the call's timeout if that is shorter (then kDeadlineExceeded).
  // `reclaim` runs between tries (an asynchronous call's queue gives A-stacks back).
  Result<uint32_t> acquireSlow(uint32_t p, Duration callTimeout, detail::Reclaim reclaim = {}) noexcept;
  // Asks the clerk for the A-stack's server thread (first use). A call's timeout bounds the
  // wait for the clerk too (kDeadlineExceeded): a slow server is not a dead one.
  Status startAStack(uint32_t index, Duration callTimeout = {}) noexcept;
  // Waits for the return of call `seq` on A-stack `index` beyond the inline spin.
  Status waitReturn(uint32_t index, uint32_t seq, int64_t deadlineNs,
                    uint32_t adaptiveSpins = detail::kAdaptiveSpins) noexcept;
  // waitReturn, for a call that said in its return block (guestSeq) that its thread runs the
  // callbacks it causes: runs them as they come, and clears guestSeq before it returns.
  Status waitReturnAsGuest(uint32_t index, uint32_t seq, detail::LazyDeadline& deadline) noexcept;
  // What a wait's outcome means for the call: kDeadlineExceeded (the A-stack abandoned), or
  // kPeerDied (the binding marked dead).
  Status endWait(uint32_t index, uint32_t seq, detail::WaitResult waited) noexcept;
  // A callback binding's doorbell (reverse()): marks the call with the forward call this thread
  // serves, if any, and wakes the callback thread unless that call's waiting thread runs it.
  void ringReverse(AStackControl* ctl, uint32_t seq) noexcept;
  // A callback binding's (reverse()): whether a call made now from this thread would be run by
  // the waiting caller of the forward call this thread serves, before that call returns.
  bool guestWaits() const noexcept;
  // Made a callback binding of the forward binding whose server side is `forward` (before any call).
  void markReverse(const void* forward) noexcept { reverseOf_ = forward; }
  // An asynchronous call's look at its return (LocalCall::await): true once call `seq` on
  // A-stack `index` has returned, waiting for it until `untilNs` at most (0: no wait).
  // kDeadlineExceeded once `deadlineNs` (0: none) has passed, the A-stack then abandoned;
  // kPeerDied when the server is gone (checked on every wait, and every so many `looks`).
  Result<bool> pollReturn(uint32_t index, uint32_t seq, int64_t untilNs, int64_t deadlineNs, uint32_t looks) noexcept;
  // The call on `index` gave up (deadline): keep the A-stack out of the pool until the server
  // has returned `seq` on it, so that the late reply never meets the next call; with
  // `streamEnd`, also until its streamed result tail counts that many bytes final.
  void abandon(uint32_t index, uint32_t seq, uint32_t streamEnd = 0) noexcept;
  // Copies Data value `ref` out of call `seq`'s streamed result tail (`tail`, on A-stack
  // `index`) into `out`, a chunk at a time as the server counts it final (ReturnControl::
  // resultReady). kPeerDied when the server goes away, kDeadlineExceeded at `deadlineNs` (0:
  // none), kBadFrame when the count stops moving for kStreamStallNs; then the A-stack stays
  // out of the pool until the server has finished the tail.
  Status copyStreamedResult(uint32_t index, uint32_t seq, std::span<const std::byte> tail, VarRef ref,
                            std::vector<uint8_t>& out, int64_t deadlineNs) noexcept;
  // Out-of-band argument tail of n bytes for the call on `index`.
  Result<std::span<std::byte>> argOutOfBand(uint32_t index, size_t n) noexcept;
  // The out-of-band result tail of n bytes the server wrote for the call on `index`.
  Result<std::span<const std::byte>> resultOutOfBand(uint32_t index, size_t n) noexcept;
  // The Status of a call whose control block reports an error (detail text from the frame).
  Status callError(uint32_t index, uint8_t code, uint32_t detailBytes) noexcept;
  void markDead() noexcept { dead_.store(true, std::memory_order_relaxed); }

  // Callbacks (runtime/callbacks.h). The id, in this process's callback table, of `object`
  // passed to the server (the callback binding is set up on first use; at most `limit`
  // objects at once); and the object such an id names when the server passes it back.
  Result<uint32_t> exportCallback(const HostedObject& object, uint32_t limit) noexcept;
  Result<HostedObject> findCallback(uint32_t id, uint64_t ifaceId) const noexcept;
  // A return's releasedId: the object with that id in this process's callback table goes
  // (an id that names none, which only a hostile server sends, is ignored).
  void releaseCallback(uint32_t id) noexcept;
  // How many objects returns released so far (releaseCallback with a host).
  uint64_t releasesCarried() const noexcept { return releasesCarried_.load(std::memory_order_relaxed); }

  const InterfaceDescriptor& iface() const noexcept { return iface_; }
  const RegionLayout& layout() const noexcept { return layout_; }
  int socket() const noexcept;

 private:
  struct Slow;
  void reclaimAbandoned() noexcept;

  // Hot fields first.
  std::byte* base_;
  uint64_t key_;
  TransferMode mode_;
  uint32_t procedureCount_;
  std::atomic<bool> dead_{false};
  std::atomic<bool> guest_{false};   // servesCallbacks()
  std::atomic<uint64_t> releasesCarried_{0};
  const void* reverseOf_ = nullptr;  // reverse()
  std::unique_ptr<Proc[]> procs_;
  std::unique_ptr<Slot[]> slots_;

  const InterfaceDescriptor& iface_;
  RegionLayout layout_;
  // Last member: it goes first, and the server's calls on our objects (its callback host)
  // end before the rest of the binding does.
  std::unique_ptr<Slow> slow_;
};

}  // namespace lrpc
