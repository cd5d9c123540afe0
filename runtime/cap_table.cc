// The export table (runtime/cap_table.h).
#include "runtime/cap_table.h"

#include <new>
#include <utility>

namespace lrpc {

CapTable::~CapTable() = default;

namespace {
constexpr uint32_t kSlotBits = 20;
constexpr uint32_t kGenerationMask = 0x7FF;  // bits 20-30
uint32_t capId(uint32_t slot, uint32_t generation) noexcept {
  return (slot + 1) | ((generation & kGenerationMask) << kSlotBits);
}
}  // namespace

const CapTable::Slot* CapTable::slotOf(uint32_t id) const noexcept {
  if (id == kNullCap || (id & kClientHostedCap) != 0) return nullptr;
  const uint32_t slot = (id & ((1u << kSlotBits) - 1)) - 1;  // id 0 in the low bits wraps to UINT32_MAX
  if (slot >= slots_.size()) return nullptr;
  const Slot& s = slots_[slot];
  if (!s.used || (s.generation & kGenerationMask) != ((id >> kSlotBits) & kGenerationMask)) return nullptr;
  return &s;
}

Result<uint32_t> CapTable::add(HostedObject object) noexcept {
  MutexLock lock(mu_);
  if (closed_) return Status(Errc::kPeerDied, "the peer that would hold the capability has gone");
  if (live_ >= limit_) {
    return Status(Errc::kResourceExhausted, "the peer holds as many capabilities as the server allows");
  }
  uint32_t slot;
  try {
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      slots_.emplace_back();
      slot = static_cast<uint32_t>(slots_.size() - 1);
    }
  } catch (const std::bad_alloc&) {
    return Status(Errc::kResourceExhausted, "capability table allocation failed");
  }
  Slot& s = slots_[slot];
  s.object = std::move(object);
  s.used = true;
  ++live_;
  return capId(slot, s.generation);
}

Result<HostedObject> CapTable::find(uint32_t id, uint64_t ifaceId) const noexcept {
  MutexLock lock(mu_);
  const Slot* s = slotOf(id);
  if (s == nullptr) return Status(Errc::kBadFrame, "capability id names no live object (forged, or released)");
  if (!heldAs(*s->object.iface, ifaceId)) {
    return Status(Errc::kBadFrame, "capability id names an object of another interface");
  }
  return s->object;
}

Status CapTable::release(uint32_t id) noexcept {
  HostedObject dropped;  // destroyed after the lock is let go: its destructor may export or release
  {
    MutexLock lock(mu_);
    const Slot* found = slotOf(id);
    if (found == nullptr) return Status(Errc::kBadFrame, "release of a capability id that names no live object");
    Slot& s = slots_[static_cast<size_t>(found - slots_.data())];
    dropped = std::move(s.object);
    s.object = {};
    s.used = false;
    ++s.generation;
    --live_;
    try {
      free_.push_back(static_cast<uint32_t>(found - slots_.data()));
    } catch (const std::bad_alloc&) {
      // The slot is only lost for reuse; its id is dead either way.
    }
  }
  return {};
}

void CapTable::close() noexcept {
  std::vector<Slot> dropped;  // destroyed after the lock is let go, as in release()
  {
    MutexLock lock(mu_);
    closed_ = true;
    dropped.swap(slots_);
    free_.clear();
    live_ = 0;
  }
}

size_t CapTable::live() const noexcept {
  MutexLock lock(mu_);
  return live_;
}

}  // namespace lrpc
