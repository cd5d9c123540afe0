#include "runtime/base/mapping.h"

#include <sys/mman.h>

#include <cerrno>

namespace lrpc {

Result<Mapping> Mapping::anonymous(size_t bytes) noexcept {
  if (bytes == 0) return Status(Errc::kInvalidArgument, "an empty mapping");
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return Status::fromErrno(errno, "mmap");
  return Mapping(p, bytes);
}

Mapping& Mapping::operator=(Mapping&& o) noexcept {
  if (this != &o) {
    reset();
    addr_ = std::exchange(o.addr_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

void Mapping::reset() noexcept {
  if (addr_ != nullptr) ::munmap(addr_, size_);
  addr_ = nullptr;
  size_ = 0;
}

}  // namespace lrpc
