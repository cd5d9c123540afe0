// The export table of one connection (runtime/capability.h): the objects its peer may call
// by id. Kept out of capability.h, which generated code includes, because it holds a lock.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "runtime/base/mutex.h"
#include "runtime/base/status.h"
#include "runtime/capability.h"

namespace lrpc {

// Whether an object of `object` may be held as interface `id`: as one of its own (isA), or as
// the untyped Capability, which any object may be held as.
inline bool heldAs(const InterfaceDescriptor& object, uint64_t id) noexcept {
  return id == Capability::kDescriptor.id || isA(object, id);
}

// The objects one connection's peer may call by id. Bounded, so that a peer that never
// releases cannot grow the server without limit. Thread-safe: every server thread of a
// binding exports and looks up through it.
//
// A call looks its object up without the lock (hold), since every call on a capability does:
// slots lie in chunks that never move once allocated, and each slot has one atomic word with
// its generation, whether the table holds its object (live), and the count of references to
// it: the table's own while live, and one per running call. The object is destroyed, and its
// slot freed, by whoever takes that count to zero once the slot is no longer live: release()
// or close() when no call runs on it, else the last such call as it ends. The lock is for the
// rare changes only: add, release, close, and freeing a slot.
class CapTable {
  struct Slot;

 public:
  static constexpr uint32_t kDefaultLimit = 4096;
  static constexpr uint32_t kMaxSlots = (1u << 20) - 1;

  // A running call's reference to an object of the table: while it is held, the object is
  // not destroyed, even once release() or close() has taken its id away.
  class Held {
   public:
    Held() noexcept = default;
    ~Held() { reset(); }
    Held(Held&& o) noexcept : table_(o.table_), slot_(std::exchange(o.slot_, nullptr)) {}
    Held& operator=(Held&& o) noexcept {
      if (this != &o) {
        reset();
        table_ = o.table_;
        slot_ = std::exchange(o.slot_, nullptr);
      }
      return *this;
    }
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;

    // Only while held.
    const InterfaceDescriptor& iface() const noexcept { return *slot_->iface; }
    void* server() const noexcept { return slot_->server; }
    // The object, shared with the table, for a caller that keeps it past the call.
    HostedObject object() const noexcept { return {slot_->iface, slot_->owner}; }
    // Lets go before the scope ends (the object may be destroyed now).
    void reset() noexcept {
      if (slot_ != nullptr) table_->unhold(*std::exchange(slot_, nullptr));
    }

   private:
    friend class CapTable;
    Held(CapTable* table, Slot* slot) noexcept : table_(table), slot_(slot) {}
    CapTable* table_ = nullptr;
    Slot* slot_ = nullptr;
  };

  explicit CapTable(uint32_t limit = kDefaultLimit) noexcept : limit_(limit < kMaxSlots ? limit : kMaxSlots) {}
  // Destroys the objects; no call may hold one any more.
  ~CapTable();
  CapTable(const CapTable&) = delete;
  CapTable& operator=(const CapTable&) = delete;

  // A fresh id for `object`; kResourceExhausted once `limit` ids are live.
  Result<uint32_t> add(HostedObject object) noexcept;
  // Holds the object `id` names for a call, if it is live and of the interface `ifaceId`; else
  // kBadFrame, and `out` holds nothing. Takes no lock.
  Status hold(uint32_t id, uint64_t ifaceId, Held& out) noexcept;
  // The same, as a HostedObject that shares the object's ownership.
  Result<HostedObject> find(uint32_t id, uint64_t ifaceId) noexcept;
  // Takes `id` away and drops the table's reference: the object is destroyed now, or when the
  // last call running on it ends. kBadFrame for an id that is not live.
  Status release(uint32_t id) noexcept;
  // The peer has gone: releases every object, and later adds fail with kPeerDied.
  void close() noexcept;
  size_t live() const noexcept;

 private:
  // A slot's state word: bits 0-30 count references, bit 31 says live, bits 32-63 hold the
  // generation, of which an id carries the low 11 bits (runtime/capability.h).
  static constexpr uint64_t kCountMask = (uint64_t{1} << 31) - 1;
  static constexpr uint64_t kLive = uint64_t{1} << 31;
  static constexpr uint64_t kGenerationOne = uint64_t{1} << 32;
  // What release adds to a live slot's word, in one step: clears live (a carry out of bit 31
  // that moves the generation on) and drops the table's reference.
  static constexpr uint64_t kReleaseStep = kGenerationOne - kLive - 1;
  static constexpr uint32_t kSlotBits = 20;
  static constexpr uint32_t kIdGenerationMask = 0x7FF;
  // Chunk k holds kFirstChunk << k slots: a small table allocates 64, and 15 chunks reach
  // kMaxSlots.
  static constexpr uint32_t kFirstChunkBits = 6;
  static constexpr uint32_t kFirstChunk = 1u << kFirstChunkBits;
  static constexpr uint32_t kChunks = 15;
  static constexpr uint32_t kNoSlot = UINT32_MAX;
  static_assert(kFirstChunk * ((1u << kChunks) - 1) >= kMaxSlots);

  // One cache line each, so that calls on two objects do not contend for one line.
  struct alignas(64) Slot {
    std::atomic<uint64_t> state{0};
    // The object. Written under mu_ while the slot is not live; read by a holder, which saw it
    // live, and by whoever frees the slot, under mu_, once nothing holds it.
    const InterfaceDescriptor* iface = nullptr;
    void* server = nullptr;
    std::shared_ptr<void> owner;
    uint32_t index = 0;          // set when the chunk is made
    Guarded<bool> occupied;      // has an object (live, or released but still held); mu_
    Guarded<uint32_t> nextFree;  // the free list, while not occupied; mu_
  };

  static uint32_t chunkOf(uint32_t index) noexcept {
    return static_cast<uint32_t>(std::bit_width(index + kFirstChunk)) - 1 - kFirstChunkBits;
  }
  static uint32_t idGeneration(uint64_t state) noexcept {
    return static_cast<uint32_t>(state >> 32) & kIdGenerationMask;
  }
  // The slot at `index`, or null where no chunk has been made for it.
  Slot* slotAt(uint32_t index) const noexcept {
    if (index >= kMaxSlots) return nullptr;
    const uint32_t k = chunkOf(index);
    // Acquire: pairs with the release store that published the chunk after its slots were made.
    Slot* chunk = chunks_[k].load(std::memory_order_acquire);
    return chunk == nullptr ? nullptr : chunk + (index + kFirstChunk - (kFirstChunk << k));
  }
  // The slot `id` names, whatever its state; null for an id that names none.
  Slot* slotOf(uint32_t id) const noexcept {
    if (id == kNullCap || (id & kClientHostedCap) != 0) return nullptr;
    return slotAt((id & ((1u << kSlotBits) - 1)) - 1);  // a zero slot field wraps to UINT32_MAX
  }
  // The slot `id` names while it is live, else null.
  Slot* liveSlot(uint32_t id) const noexcept LRPC_REQUIRES(mu_);
  // A slot never used yet, or one freed; null when there is none to be had.
  Slot* freeSlot() noexcept LRPC_REQUIRES(mu_);
  // Takes a live slot's id away and drops the table's reference.
  void unpublish(Slot& s) noexcept LRPC_REQUIRES(mu_);
  // Frees `s` if it has an object that nothing holds any more, and gives that object back
  // (for the caller to destroy once mu_ is let go: its destructor may add or release).
  std::shared_ptr<void> takeUnheld(Slot& s) noexcept LRPC_REQUIRES(mu_);
  // A call's end, or an undone lookup: drops one reference.
  void unhold(Slot& s) noexcept {
    // Release: the call's uses of the object happen before its destruction, which whoever
    // frees the slot orders after this with its acquire load (takeUnheld).
    const uint64_t old = s.state.fetch_sub(1, std::memory_order_release);
    if ((old & (kLive | kCountMask)) == 1) [[unlikely]] reap(s);
  }
  // The count has reached zero on a slot that is not live: frees it, if nobody has yet.
  void reap(Slot& s) noexcept LRPC_EXCLUDES(mu_);

  mutable Mutex mu_;
  // Published with a release store under mu_, read by lookups without it; never moved or
  // freed before the table is destroyed.
  std::atomic<Slot*> chunks_[kChunks] = {};
  uint32_t used_ LRPC_GUARDED_BY(mu_) = 0;  // slots [0, used_) have been handed out at least once
  uint32_t freeHead_ LRPC_GUARDED_BY(mu_) = kNoSlot;
  size_t live_ LRPC_GUARDED_BY(mu_) = 0;
  bool closed_ LRPC_GUARDED_BY(mu_) = false;
  uint32_t limit_;
};

inline Status CapTable::hold(uint32_t id, uint64_t ifaceId, Held& out) noexcept {
  out.reset();
  Slot* s = slotOf(id);
  if (s == nullptr) return Status(Errc::kBadFrame, "capability id names no live object (forged, or released)");
  // Acquire: once the word says live, the object that add() wrote before its release step
  // that set live is visible here.
  const uint64_t old = s->state.fetch_add(1, std::memory_order_acquire);
  Held held(this, s);  // undoes the count on every way out that does not hand it over
  if ((old & kLive) == 0 || idGeneration(old) != ((id >> kSlotBits) & kIdGenerationMask)) {
    return Status(Errc::kBadFrame, "capability id names no live object (forged, or released)");
  }
  if (!heldAs(*s->iface, ifaceId)) return Status(Errc::kBadFrame, "capability id names an object of another interface");
  out = std::move(held);
  return {};
}

}  // namespace lrpc
