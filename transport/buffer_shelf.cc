#include "transport/buffer_shelf.h"

#include <algorithm>

#include "runtime/server_call.h"

namespace lrpc::net {

void BufferShelf::lend(MessageBuffer& buffer, size_t bytes) noexcept {
  MutexLock lock(mu_);
  auto best = kept_.end();
  for (auto it = kept_.begin(); it != kept_.end(); ++it) {
    if (it->capacity >= bytes && (best == kept_.end() || it->capacity < best->capacity)) best = it;
  }
  if (best == kept_.end()) return;
  buffer.adoptHeap(std::move(best->storage), best->capacity);
  kept_.erase(best);
}

void BufferShelf::put(MessageBuffer& buffer) noexcept {
  size_t capacity = 0;
  std::unique_ptr<std::byte[]> storage = buffer.releaseHeap(&capacity);
  if (!storage || capacity < kKeepAtLeast || maxBytes_ == 0 || capacity > maxBytes_ + kFrameSlack) return;
  MutexLock lock(mu_);
  if (kept_.size() < kKept) {
    try {
      kept_.push_back(Kept{std::move(storage), capacity});
    } catch (...) {
    }
    return;
  }
  // Full: keep the larger ones.
  auto smallest = std::min_element(kept_.begin(), kept_.end(),
                                   [](const Kept& a, const Kept& b) { return a.capacity < b.capacity; });
  if (smallest->capacity < capacity) *smallest = Kept{std::move(storage), capacity};
}

std::vector<uint8_t> ResultShelf::take() noexcept {
  MutexLock lock(mu_);
  std::vector<uint8_t> out = std::move(kept_);
  out.clear();
  return out;
}

void ResultShelf::put(std::vector<uint8_t>& value) noexcept {
  if (value.capacity() > maxBytes_ + BufferShelf::kFrameSlack) return;
  MutexLock lock(mu_);
  detail::keepLargerStorage(kept_, value);
}

}  // namespace lrpc::net
