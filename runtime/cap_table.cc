// The export table (runtime/cap_table.h): what takes its lock.
#include "runtime/cap_table.h"

#include <new>
#include <utility>

namespace lrpc {

namespace {
uint32_t capId(uint32_t slot, uint32_t generation) noexcept { return (slot + 1) | (generation << 20); }
}  // namespace

CapTable::~CapTable() {
  close();
  for (std::atomic<Slot*>& chunk : chunks_) delete[] chunk.load(std::memory_order_relaxed);
}

CapTable::Slot* CapTable::liveSlot(uint32_t id) const noexcept {
  Slot* s = slotOf(id);
  if (s == nullptr) return nullptr;
  // Relaxed: live and the generation change only under mu_, which this thread holds.
  const uint64_t state = s->state.load(std::memory_order_relaxed);
  if ((state & kLive) == 0 || idGeneration(state) != ((id >> kSlotBits) & kIdGenerationMask)) return nullptr;
  return s;
}

CapTable::Slot* CapTable::freeSlot() noexcept {
  if (freeHead_ != kNoSlot) {
    Slot* s = slotAt(freeHead_);
    freeHead_ = s->nextFree.get(mu_);
    return s;
  }
  if (used_ >= kMaxSlots) return nullptr;
  const uint32_t k = chunkOf(used_);
  if (chunks_[k].load(std::memory_order_relaxed) == nullptr) {  // relaxed: only mu_'s holder stores it
    const uint32_t first = (kFirstChunk << k) - kFirstChunk;
    Slot* chunk = new (std::nothrow) Slot[kFirstChunk << k];
    if (chunk == nullptr) return nullptr;
    for (uint32_t i = 0; i < (kFirstChunk << k); ++i) chunk[i].index = first + i;
    // Release: a lookup that loads the pointer (acquire, slotAt) sees the slots as made here.
    chunks_[k].store(chunk, std::memory_order_release);
  }
  return slotAt(used_++);
}

Result<uint32_t> CapTable::add(HostedObject object) noexcept {
  MutexLock lock(mu_);
  if (closed_) return Status(Errc::kPeerDied, "the peer that would hold the capability has gone");
  if (live_ >= limit_) {
    return Status(Errc::kResourceExhausted, "the peer holds as many capabilities as the server allows");
  }
  Slot* s = freeSlot();
  if (s == nullptr) return Status(Errc::kResourceExhausted, "capability table allocation failed");
  s->iface = object.iface;
  s->owner = std::move(object.server);
  s->server = s->owner.get();
  s->occupied.get(mu_) = true;
  ++live_;
  // Release: a lookup whose acquire increment sees live sees the object written above. A
  // lookup of an old id may have counted itself in meanwhile: this adds to its count, never
  // overwrites it.
  const uint64_t old = s->state.fetch_add(kLive + 1, std::memory_order_release);
  return capId(s->index, idGeneration(old));
}

void CapTable::unpublish(Slot& s) noexcept {
  --live_;
  // Relaxed: mu_ orders this against the other changes of live; the holders' uses of the
  // object are ordered before its destruction by takeUnheld's acquire load.
  s.state.fetch_add(kReleaseStep, std::memory_order_relaxed);
}

std::shared_ptr<void> CapTable::takeUnheld(Slot& s) noexcept {
  // Acquire: every holder's release decrement before this value (all changes of the word are
  // read-modify-writes, so each heads a release sequence this reads from) happens before the
  // object's destruction.
  const uint64_t state = s.state.load(std::memory_order_acquire);
  // Still counted: that holder reaps when it lets go. Live again, or not occupied: another
  // thread freed it first.
  if ((state & (kLive | kCountMask)) != 0 || !s.occupied.get(mu_)) return nullptr;
  s.occupied.get(mu_) = false;
  s.iface = nullptr;
  s.server = nullptr;
  s.nextFree.get(mu_) = freeHead_;
  freeHead_ = s.index;
  return std::move(s.owner);
}

void CapTable::reap(Slot& s) noexcept {
  std::shared_ptr<void> dropped;  // declared first: destroyed after the lock is let go
  MutexLock lock(mu_);
  dropped = takeUnheld(s);
}

Status CapTable::release(uint32_t id) noexcept {
  std::shared_ptr<void> dropped;  // as in reap
  MutexLock lock(mu_);
  Slot* s = liveSlot(id);
  if (s == nullptr) return Status(Errc::kBadFrame, "release of a capability id that names no live object");
  unpublish(*s);
  dropped = takeUnheld(*s);
  return {};
}

void CapTable::close() noexcept {
  uint32_t used = 0;
  {
    MutexLock lock(mu_);
    closed_ = true;
    used = used_;
    for (uint32_t i = 0; i < used; ++i) {
      Slot& s = *slotAt(i);
      // Relaxed: live changes only under mu_.
      if ((s.state.load(std::memory_order_relaxed) & kLive) != 0) unpublish(s);
    }
  }
  // One at a time with the lock let go, as each destructor may call back into the table; an
  // object that a call still runs on goes when the call ends. No slot turns live again: adds fail.
  for (uint32_t i = 0; i < used; ++i) reap(*slotAt(i));
}

size_t CapTable::live() const noexcept {
  MutexLock lock(mu_);
  return live_;
}

Result<HostedObject> CapTable::find(uint32_t id, uint64_t ifaceId) noexcept {
  Held held;
  if (Status s = hold(id, ifaceId, held); !s.isOk()) return s;
  return held.object();
}

}  // namespace lrpc
