// The export table (runtime/cap_table.h): adding, releasing and freeing slots.
#include "runtime/cap_table.h"

#include <new>
#include <utility>

namespace lrpc {

namespace {
uint32_t capId(uint32_t slot, uint32_t generation) noexcept { return (slot + 1) | (generation << 20); }
constexpr uint64_t kTagOne = uint64_t{1} << 32;
}  // namespace

CapTable::~CapTable() {
  close();
  for (std::atomic<Slot*>& chunk : chunks_) delete[] chunk.load(std::memory_order_relaxed);
}

CapTable::Slot* CapTable::popFree() noexcept {
  // Acquire: the slot's fields as its last freer left them, before its release CAS in freeSlot().
  uint64_t head = freeHead_.load(std::memory_order_acquire);
  for (;;) {
    const uint32_t index = static_cast<uint32_t>(head);
    if (index == kNoSlot) return nullptr;
    Slot* s = slotAt(index);
    // Relaxed: if another thread took this slot meanwhile, the tag has moved and the CAS fails.
    const uint32_t next = s->nextFree.load(std::memory_order_relaxed);
    // Acquire on success: as for the load above.
    if (freeHead_.compare_exchange_weak(head, ((head & ~uint64_t{kNoSlot}) + kTagOne) | next,
                                        std::memory_order_acquire, std::memory_order_acquire)) {
      return s;
    }
  }
}

CapTable::Slot* CapTable::grow() noexcept {
  MutexLock lock(growMu_);
  // Relaxed: only growMu_'s holder stores used_ and the chunk pointers.
  const uint32_t used = used_.load(std::memory_order_relaxed);
  if (used >= limit_) return nullptr;
  const uint32_t k = chunkOf(used);
  if (chunks_[k].load(std::memory_order_relaxed) == nullptr) {
    const uint32_t first = (kFirstChunk << k) - kFirstChunk;
    Slot* chunk = new (std::nothrow) Slot[kFirstChunk << k];
    if (chunk == nullptr) return nullptr;
    for (uint32_t i = 0; i < (kFirstChunk << k); ++i) chunk[i].index = first + i;
    // Release: a lookup that loads the pointer (acquire, slotAt) sees the slots as made here.
    chunks_[k].store(chunk, std::memory_order_release);
  }
  // Seq_cst (release at least: whoever reads used_ with acquire finds the chunk published):
  // ordered before add()'s publishing of this slot, so that close() scans it (see add()).
  used_.store(used + 1, std::memory_order_seq_cst);
  return slotAt(used);
}

CapTable::Slot* CapTable::takeSlot() noexcept {
  if (Slot* s = popFree(); s != nullptr) return s;
  if (Slot* s = grow(); s != nullptr) return s;
  return popFree();  // at the limit: a slot may have been freed since the first look
}

Result<uint32_t> CapTable::add(HostedObject object) noexcept {
  // Relaxed: a first look only; the look after publishing below is the one that counts.
  if (closed_.load(std::memory_order_relaxed)) {
    return Status(Errc::kPeerDied, "the peer that would hold the capability has gone");
  }
  Slot* s = takeSlot();
  if (s == nullptr) return Status(Errc::kResourceExhausted, "the peer holds as many capabilities as the server allows");
  // Nobody else writes these until the slot is freed again: it came off the free list, or is new.
  s->iface = object.iface;
  s->owner = std::move(object.server);
  s->server = s->owner.get();
  // Seq_cst (release at least: a lookup whose acquire increment sees live sees the object
  // written above). A stale lookup may have counted itself in meanwhile: this adds to its
  // count, never overwrites it.
  const uint64_t old = s->state.fetch_add(kOccupied | kLive | 1, std::memory_order_seq_cst);
  const uint32_t id = capId(s->index, idGeneration(old));
  // Seq_cst, with close()'s store of closed_ and its loads of each word: either close() sees
  // this slot live and releases it, or this sees closed_ and does (both may; one wins).
  if (closed_.load(std::memory_order_seq_cst)) {
    (void)release(id);
    return Status(Errc::kPeerDied, "the peer that would hold the capability has gone");
  }
  return id;
}

bool CapTable::unpublish(Slot& s, uint32_t id) noexcept {
  // Relaxed: the CAS below checks the value this loop works from.
  uint64_t state = s.state.load(std::memory_order_relaxed);
  for (;;) {
    if (id == kAnyId ? (state & kLive) == 0 : !names(state, id)) return false;
    uint64_t next = state + kReleaseStep;
    // No call runs on the object: this step frees the slot too, with one CAS, not two.
    const bool done = (next & (kOccupied | kLive | kCountMask)) == kOccupied;
    if (done) next &= ~kOccupied;
    // Acq_rel: acquire, so that the holders' release decrements come before a destruction
    // here (every change of the word is a read-modify-write, so each heads a release sequence
    // this reads from); release, for a holder that frees the slot after this.
    if (s.state.compare_exchange_weak(state, next, std::memory_order_acq_rel, std::memory_order_relaxed)) {
      if (done) freeSlot(s);
      return true;
    }
  }
}

void CapTable::reapIfDone(Slot& s, uint64_t state) noexcept {
  while ((state & (kOccupied | kLive | kCountMask)) == kOccupied) {
    // Acquire: as in unpublish; the CAS fails if a stale lookup counted itself in meanwhile,
    // and that lookup reaps when it lets go.
    if (s.state.compare_exchange_weak(state, state & ~kOccupied, std::memory_order_acquire,
                                      std::memory_order_relaxed)) {
      freeSlot(s);
      return;
    }
  }
}

void CapTable::freeSlot(Slot& s) noexcept {
  std::shared_ptr<void> dropped = std::move(s.owner);  // destroyed last: its destructor may add or release
  s.iface = nullptr;
  s.server = nullptr;
  uint64_t head = freeHead_.load(std::memory_order_relaxed);
  do {
    // Relaxed: published by the CAS's release.
    s.nextFree.store(static_cast<uint32_t>(head), std::memory_order_relaxed);
    // Release: the next taker of this slot (acquire, popFree) sees the fields cleared above.
  } while (!freeHead_.compare_exchange_weak(head, ((head & ~uint64_t{kNoSlot}) + kTagOne) | s.index,
                                            std::memory_order_release, std::memory_order_relaxed));
}

Status CapTable::release(uint32_t id) noexcept {
  Slot* s = slotOf(id);
  if (s == nullptr || !unpublish(*s, id)) {
    return Status(Errc::kBadFrame, "release of a capability id that names no live object");
  }
  return {};
}

void CapTable::close() noexcept {
  // Seq_cst: see add().
  closed_.store(true, std::memory_order_seq_cst);
  // Seq_cst: after closed_ is set, so that an add() that did not see it finds its slot below
  // used_ (grow); acquire at least: those slots' chunks are published.
  const uint32_t used = used_.load(std::memory_order_seq_cst);
  // One at a time, as each destructor may call back into the table; an object that a call
  // still runs on goes when the call ends. No slot turns live again: adds fail.
  for (uint32_t i = 0; i < used; ++i) {
    Slot& s = *slotAt(i);
    // Seq_cst: see add().
    if ((s.state.load(std::memory_order_seq_cst) & kLive) != 0) (void)unpublish(s, kAnyId);
  }
}

size_t CapTable::live() const noexcept {
  size_t n = 0;
  const uint32_t used = used_.load(std::memory_order_acquire);  // as in close()
  for (uint32_t i = 0; i < used; ++i) {
    // Relaxed: a count, which is only exact while nothing adds or releases.
    if ((slotAt(i)->state.load(std::memory_order_relaxed) & kLive) != 0) ++n;
  }
  return n;
}

Result<HostedObject> CapTable::find(uint32_t id, uint64_t ifaceId) noexcept {
  Held held;
  if (Status s = hold(id, ifaceId, held); !s.isOk()) return s;
  return held.object();
}

}  // namespace lrpc
