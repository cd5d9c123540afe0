#include "runtime/shm.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>

namespace lrpc {

namespace {
constexpr int kSizeSeals = F_SEAL_SHRINK | F_SEAL_GROW;
}

Result<SharedMemory> SharedMemory::create(const char* debugName, size_t size) {
  if (size == 0) return Status(Errc::kInvalidArgument, "shared memory of size 0");
  OwnedFd fd(::memfd_create(debugName, MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid()) return Status::fromErrno(errno, "memfd_create");
  if (::ftruncate(fd.get(), static_cast<off_t>(size)) != 0) {
    return Status(Errc::kResourceExhausted, "ftruncate of a memfd failed");
  }
  if (::fcntl(fd.get(), F_ADD_SEALS, kSizeSeals | F_SEAL_SEAL) != 0) return Status::fromErrno(errno, "F_ADD_SEALS");
  void* addr = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (addr == MAP_FAILED) return Status(Errc::kResourceExhausted, "mmap of a memfd failed");
  return SharedMemory(std::move(fd), Mapping(addr, size));
}

Result<SharedMemory> SharedMemory::adopt(OwnedFd fd, size_t size) {
  if (!fd.valid() || size == 0) return Status(Errc::kBindingRejected, "no shared memory received");
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return Status::fromErrno(errno, "fstat");
  if (static_cast<size_t>(st.st_size) != size) {
    return Status(Errc::kBindingRejected, "shared memory has " + std::to_string(st.st_size) + " bytes, expected " +
                                              std::to_string(size));
  }
  int seals = ::fcntl(fd.get(), F_GET_SEALS);
  if (seals < 0 || (seals & kSizeSeals) != kSizeSeals) {
    return Status(Errc::kBindingRejected, "shared memory is not sealed against resizing");
  }
  void* addr = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (addr == MAP_FAILED) return Status(Errc::kResourceExhausted, "mmap of a received memfd failed");
  return SharedMemory(std::move(fd), Mapping(addr, size));
}

}  // namespace lrpc
