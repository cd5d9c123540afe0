// The export table of one connection (runtime/capability.h): the objects its peer may call
// by id. Kept out of capability.h, which generated code includes, because it holds a lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

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
class CapTable {
 public:
  static constexpr uint32_t kDefaultLimit = 4096;
  static constexpr uint32_t kMaxSlots = (1u << 20) - 1;

  explicit CapTable(uint32_t limit = kDefaultLimit) noexcept : limit_(limit < kMaxSlots ? limit : kMaxSlots) {}
  ~CapTable();
  CapTable(const CapTable&) = delete;
  CapTable& operator=(const CapTable&) = delete;

  // A fresh id for `object`; kResourceExhausted once `limit` ids are live.
  Result<uint32_t> add(HostedObject object) noexcept;
  // The object `id` names, if it is live and of the interface `ifaceId`; else kBadFrame.
  Result<HostedObject> find(uint32_t id, uint64_t ifaceId) const noexcept;
  // Drops the table's reference (the object is destroyed if that was the last); kBadFrame
  // for an id that is not live.
  Status release(uint32_t id) noexcept;
  // The peer has gone: drops every object, and later adds fail with kPeerDied.
  void close() noexcept;
  size_t live() const noexcept;

 private:
  struct Slot {
    HostedObject object;
    uint32_t generation = 0;
    bool used = false;
  };
  // The slot `id` names while it is live, else null.
  const Slot* slotOf(uint32_t id) const noexcept LRPC_REQUIRES(mu_);

  mutable Mutex mu_;
  std::vector<Slot> slots_ LRPC_GUARDED_BY(mu_);
  std::vector<uint32_t> free_ LRPC_GUARDED_BY(mu_);
  size_t live_ LRPC_GUARDED_BY(mu_) = 0;
  bool closed_ LRPC_GUARDED_BY(mu_) = false;
  uint32_t limit_;
};

}  // namespace lrpc
