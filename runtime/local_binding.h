// The client side of a same-host binding: the mapped A-stack region, the per-procedure
// free lists of A-stacks, and the socket to the server's clerk. What a LocalCall works on.
// Created by importBinding (runtime/import.h); owned through lrpc::Binding.
//
// Thread safety: any number of threads may call through one LocalBinding at once. The call
// path takes no lock: an A-stack is owned by one call from pop() to push(), and everything
// per-A-stack (Slot) is touched only by its current owner. The socket (first use of an
// A-stack, out-of-band segments) is serialized by sockMu_, off the fast path.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "runtime/astack.h"
#include "runtime/fd.h"
#include "runtime/protocol.h"
#include "runtime/shm.h"
#include "runtime/status.h"
#include "runtime/transfer.h"

namespace lrpc {

namespace detail {

// A client-private LIFO free list of one procedure's A-stacks, without locks: a Treiber stack
// of indices whose head carries an ABA tag that every successful pop and push increments.
class AStackPool {
 public:
  static constexpr uint32_t kEmpty = UINT32_MAX;

  AStackPool() = default;
  AStackPool(const AStackPool&) = delete;
  AStackPool& operator=(const AStackPool&) = delete;

  // All `count` A-stacks from `first` on are free.
  void init(uint32_t first, uint32_t count);

  // A free A-stack's global index, or kEmpty.
  uint32_t pop() noexcept {
    uint64_t h = head_.load(std::memory_order_acquire);
    for (;;) {
      uint32_t top = static_cast<uint32_t>(h);
      if (top == 0) return kEmpty;
      // May read a stale link if another thread pops `top` meanwhile; the tag makes our CAS fail then.
      uint32_t next = next_[top - 1].load(std::memory_order_relaxed);
      uint64_t fresh = ((h >> 32) + 1) << 32 | next;
      // Acquire: we take over the A-stack and must see what its previous owner wrote.
      if (head_.compare_exchange_weak(h, fresh, std::memory_order_acquire, std::memory_order_acquire)) {
        return first_ + top - 1;
      }
    }
  }

  void push(uint32_t index) noexcept {
    uint32_t local = index - first_;
    uint64_t h = head_.load(std::memory_order_relaxed);
    for (;;) {
      next_[local].store(static_cast<uint32_t>(h), std::memory_order_relaxed);
      uint64_t fresh = ((h >> 32) + 1) << 32 | (local + 1);
      // Release: the next owner must see our writes to the A-stack and its Slot.
      if (head_.compare_exchange_weak(h, fresh, std::memory_order_release, std::memory_order_relaxed)) return;
    }
  }

 private:
  alignas(kCacheLine) std::atomic<uint64_t> head_{0};  // tag << 32 | (local index + 1); 0 = empty
  uint32_t first_ = 0;
  std::unique_ptr<std::atomic<uint32_t>[]> next_;
};

}  // namespace detail

class LocalBinding {
 public:
  struct Proc {
    ProcedureLayout layout;
    detail::AStackPool pool;
  };
  // Client-private state of one A-stack; only its current owner touches it.
  struct Slot {
    uint32_t seq = 0;       // sequence number of the last call made on it
    bool started = false;   // the server has a thread for it
    std::unique_ptr<SharedMemory> argSegment;     // out-of-band argument tail
    std::unique_ptr<SharedMemory> resultSegment;  // out-of-band result tail
  };

  LocalBinding(const InterfaceDescriptor& iface, RegionLayout layout, SharedMemory region, OwnedFd socket,
               uint64_t key, TransferMode mode, std::chrono::nanoseconds astackWait);
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
  const std::byte* argSegmentBase(uint32_t index) const noexcept { return slots_[index].argSegment->data(); }
  uint64_t key() const noexcept { return key_; }
  TransferMode mode() const noexcept { return mode_; }

  // ---- slow paths, out of line ----
  // Waits for a free A-stack of procedure p: up to the import's astackWait (then
  // kResourceExhausted), or the call's timeout if that is shorter (then kDeadlineExceeded).
  Result<uint32_t> acquireSlow(uint32_t p, std::chrono::nanoseconds callTimeout) noexcept;
  // Asks the clerk for the A-stack's server thread (first use). A call's timeout bounds the
  // wait for the clerk too (kDeadlineExceeded): a slow server is not a dead one.
  Status startAStack(uint32_t index, std::chrono::nanoseconds callTimeout = {}) noexcept;
  // Waits for the return of call `seq` on A-stack `index` beyond the inline spin.
  Status waitReturn(uint32_t index, uint32_t seq, int64_t deadlineNs) noexcept;
  // The call on `index` gave up (deadline): keep the A-stack out of the pool until the server
  // has returned `seq` on it, so that the late reply never meets the next call.
  void abandon(uint32_t index, uint32_t seq) noexcept;
  // Out-of-band argument tail of n bytes for the call on `index`.
  Result<std::span<std::byte>> argOutOfBand(uint32_t index, size_t n) noexcept;
  // The out-of-band result tail of n bytes the server wrote for the call on `index`.
  Result<std::span<const std::byte>> resultOutOfBand(uint32_t index, size_t n) noexcept;
  // The Status of a call whose control block reports an error (detail text from the frame).
  Status callError(uint32_t index, uint8_t code) noexcept;
  void markDead() noexcept { dead_.store(true, std::memory_order_relaxed); }

  const InterfaceDescriptor& iface() const noexcept { return iface_; }
  const RegionLayout& layout() const noexcept { return layout_; }
  int socket() const noexcept { return socket_.get(); }

 private:
  // Sends `request` and waits for the reply of type `want` for the same A-stack; replies for
  // other A-stacks that arrive meanwhile are kept in pending_. Requires sockMu_.
  // deadlineNs (monotonic, 0 for none) bounds the wait for the reply below the clerk's own
  // limit: then kDeadlineExceeded, and the binding stays usable (a late reply waits in pending_).
  Status exchangeLocked(const detail::Message& request, detail::MsgType want, detail::Message* reply,
                        OwnedFd* fd, int64_t deadlineNs = 0) noexcept;
  void reclaimAbandoned() noexcept;

  // Hot fields first.
  std::byte* base_;
  uint64_t key_;
  TransferMode mode_;
  uint32_t procedureCount_;
  std::atomic<bool> dead_{false};
  std::unique_ptr<Proc[]> procs_;
  std::unique_ptr<Slot[]> slots_;

  const InterfaceDescriptor& iface_;
  RegionLayout layout_;
  std::chrono::nanoseconds astackWait_;
  SharedMemory region_;
  OwnedFd socket_;

  struct Pending {
    detail::Message message;
    OwnedFd fd;
  };
  std::mutex sockMu_;
  std::vector<Pending> pending_;  // guarded by sockMu_

  struct Abandoned {
    uint32_t index;
    uint32_t seq;
  };
  std::mutex abandonedMu_;
  std::vector<Abandoned> abandoned_;  // guarded by abandonedMu_
  std::atomic<bool> anyAbandoned_{false};
};

}  // namespace lrpc
