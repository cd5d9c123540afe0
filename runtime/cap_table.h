// The export table of one connection (runtime/capability.h): the objects its peer may call
// by id. Kept out of capability.h, which generated code includes: it is the runtime's own.
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
// binding exports and looks up through it, and a client passes one of its objects on every
// call that takes a callback, so add and release are as cheap as a lookup: none of the three
// takes a lock, which only growing the table does.
//
// Slots lie in chunks that never move once allocated. Each slot has one atomic word with its
// generation, whether the table holds its object (live), whether the slot has an object at all
// (occupied: live, or released while a call still runs on it), and the count of references to
// the object: the table's own while live, and one per running call. A lookup counts itself in
// first and checks after, so a stale one may briefly count on any slot. Whoever takes the word
// to occupied, not live and uncounted clears occupied with a CAS, so that exactly one thread
// destroys the object and puts the slot on the free list: release() or close() when no call
// runs on it, else the last such call as it ends. The free list is a stack of slot indexes
// whose head carries a tag that every change moves on, so that a slot taken and given back
// between one thread's read of the head and its CAS fails that CAS (no ABA).
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

  // A fresh id for `object`; kResourceExhausted once `limit` slots have objects (live ones,
  // and released ones that a call still runs on).
  Result<uint32_t> add(HostedObject object) noexcept;
  // Holds the object `id` names for a call, if it is live and of the interface `ifaceId`; else
  // kBadFrame, and `out` holds nothing.
  Status hold(uint32_t id, uint64_t ifaceId, Held& out) noexcept;
  // The same, as a HostedObject that shares the object's ownership.
  Result<HostedObject> find(uint32_t id, uint64_t ifaceId) noexcept;
  // Takes `id` away and drops the table's reference: the object is destroyed now, or when the
  // last call running on it ends. kBadFrame for an id that is not live.
  Status release(uint32_t id) noexcept;
  // The peer has gone: releases every object, and later adds fail with kPeerDied.
  void close() noexcept;
  // How many ids are live (a look over the table: for tests and statistics).
  size_t live() const noexcept;

 private:
  // A slot's state word: bits 0-29 count references, bit 30 says occupied, bit 31 live, bits
  // 32-63 hold the generation, of which an id carries the low 11 bits (runtime/capability.h).
  static constexpr uint64_t kCountMask = (uint64_t{1} << 30) - 1;
  static constexpr uint64_t kOccupied = uint64_t{1} << 30;
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
  // To unpublish(): whatever id the slot is live under (no real id has all bits set).
  static constexpr uint32_t kAnyId = UINT32_MAX;
  static_assert(kFirstChunk * ((1u << kChunks) - 1) >= kMaxSlots);

  // One cache line each, so that calls on two objects do not contend for one line.
  struct alignas(64) Slot {
    std::atomic<uint64_t> state{0};
    // The object. Written by add() while the slot is not occupied, and by whoever cleared
    // occupied; read by a holder, which saw it live.
    const InterfaceDescriptor* iface = nullptr;
    void* server = nullptr;
    std::shared_ptr<void> owner;
    uint32_t index = 0;                 // set when the chunk is made
    std::atomic<uint32_t> nextFree{0};  // the free list's next index, while on it
  };

  static uint32_t chunkOf(uint32_t index) noexcept {
    return static_cast<uint32_t>(std::bit_width(index + kFirstChunk)) - 1 - kFirstChunkBits;
  }
  static uint32_t idGeneration(uint64_t state) noexcept {
    return static_cast<uint32_t>(state >> 32) & kIdGenerationMask;
  }
  static bool names(uint64_t state, uint32_t id) noexcept {
    return (state & kLive) != 0 && idGeneration(state) == ((id >> kSlotBits) & kIdGenerationMask);
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
  // A slot off the free list, or a new one; null at the limit or when allocation fails.
  Slot* takeSlot() noexcept;
  Slot* popFree() noexcept;
  Slot* grow() noexcept LRPC_EXCLUDES(growMu_);
  // Takes a live slot's id away (if `id` still names it, or for kAnyId whatever id) and drops the
  // table's reference; false if the slot was not live under `id`.
  bool unpublish(Slot& s, uint32_t id) noexcept;
  // The word has just become `state`: frees the slot if that is occupied, not live and
  // uncounted, and nobody else has freed it first.
  void reapIfDone(Slot& s, uint64_t state) noexcept;
  // Frees a slot whose occupied bit this thread cleared.
  void freeSlot(Slot& s) noexcept;
  // A call's end, or an undone lookup: drops one reference.
  void unhold(Slot& s) noexcept {
    // Release: the call's uses of the object happen before its destruction, which whoever
    // frees the slot orders after this with its acquire CAS (reapIfDone).
    const uint64_t old = s.state.fetch_sub(1, std::memory_order_release);
    if ((old & (kOccupied | kLive | kCountMask)) == (kOccupied | 1)) [[unlikely]] reapIfDone(s, old - 1);
  }

  // Published with a release store under growMu_, read by lookups without it; never moved or
  // freed before the table is destroyed.
  std::atomic<Slot*> chunks_[kChunks] = {};
  // The free list's head: a slot index (kNoSlot: empty) in the low half, the tag in the high.
  std::atomic<uint64_t> freeHead_{kNoSlot};
  std::atomic<bool> closed_{false};
  Mutex growMu_;
  // Slots [0, used_) have been handed out at least once. Stored under growMu_, read without.
  std::atomic<uint32_t> used_{0};
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
  if (!names(old, id)) return Status(Errc::kBadFrame, "capability id names no live object (forged, or released)");
  if (!heldAs(*s->iface, ifaceId)) return Status(Errc::kBadFrame, "capability id names an object of another interface");
  out = std::move(held);
  return {};
}

}  // namespace lrpc
