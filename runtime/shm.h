// Shared memory as an RAII value: SharedMemory (a memfd plus its Mapping), created through static functions that return Result, never half-built objects.
#pragma once

#include <cstddef>
#include <utility>

#include "runtime/base/fd.h"
#include "runtime/base/mapping.h"
#include "runtime/base/status.h"

namespace lrpc {

// A memfd and its shared read-write mapping. Members are destroyed in reverse order: the
// mapping goes first, then the fd.
class SharedMemory {
 public:
  // Creates a zero-filled memfd of `size` bytes (size > 0), maps it, and seals its size
  // (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) so that a peer holding the fd can neither
  // truncate it under our mapping (SIGBUS) nor change the seals.
  static Result<SharedMemory> create(const char* debugName, size_t size);
  // Maps a memfd received from a peer. It must be exactly `size` bytes and carry the size
  // seals; otherwise the peer could shrink it under us.
  static Result<SharedMemory> adopt(OwnedFd fd, size_t size);

  SharedMemory(SharedMemory&&) noexcept = default;
  SharedMemory& operator=(SharedMemory&&) noexcept = default;

  int fd() const noexcept { return fd_.get(); }
  std::byte* data() const noexcept { return map_.data(); }
  size_t size() const noexcept { return map_.size(); }

 private:
  SharedMemory(OwnedFd fd, Mapping map) noexcept : fd_(std::move(fd)), map_(std::move(map)) {}

  OwnedFd fd_;
  Mapping map_;
};

}  // namespace lrpc
