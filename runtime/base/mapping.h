// Mapping: a mapped range of memory, unmapped exactly once, by its destructor. The shared
// A-stack regions (runtime/shm.h) and the transport's private communication segments are
// both Mappings.
#pragma once

#include <cstddef>
#include <utility>

#include "runtime/base/status.h"

namespace lrpc {

class Mapping {
 public:
  // Private, zero-filled, read-write anonymous memory of `bytes` (> 0) bytes.
  static Result<Mapping> anonymous(size_t bytes) noexcept;

  Mapping() noexcept = default;
  // Takes ownership of a range mmap returned.
  Mapping(void* addr, size_t size) noexcept : addr_(addr), size_(size) {}
  Mapping(Mapping&& o) noexcept : addr_(std::exchange(o.addr_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  Mapping& operator=(Mapping&& o) noexcept;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() { reset(); }

  std::byte* data() const noexcept { return static_cast<std::byte*>(addr_); }
  size_t size() const noexcept { return size_; }
  void reset() noexcept;

 private:
  void* addr_ = nullptr;
  size_t size_ = 0;
};

}  // namespace lrpc
