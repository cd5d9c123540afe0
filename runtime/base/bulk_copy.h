// Copies of large values that keep their speed whatever the two addresses are.
//
// glibc before 2.39 (Debian 12 has 2.36) copies 2 KiB to 512 KiB with `rep movsb` on a CPU that
// reports fast short rep-movsb (FSRM). On AMD Zen 3 that instruction runs about 15x slower when
// the destination lies 1 to 31 bytes past the source modulo 4 KiB (glibc bug 30994): 2.5 GB/s
// against 45 (bench/README.md, "The copy's distance"). 16 bytes is exactly the distance
// between a page-aligned shared segment and a large std::vector, whose bytes start 16 bytes into
// their page, so every large value lrpc copies in or out would pay it. Such a copy runs here
// backwards, 64 bytes at a time, where no load follows a store to the same page offset; every
// other copy is memcpy.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace lrpc::detail {

// Below this glibc copies with vector moves, whatever the distance (its threshold is 2 KiB or more).
inline constexpr size_t kAliasedCopyFrom = 2048;

// Whether copying n bytes from src to dst would meet the slow distance.
inline bool aliasedCopy(const void* dst, const void* src, size_t n) noexcept {
  const uintptr_t d = (reinterpret_cast<uintptr_t>(dst) - reinterpret_cast<uintptr_t>(src)) & 4095;
  return n >= kAliasedCopyFrom && d != 0 && d < 32;
}

// memcpy's contract (no overlap), copying backwards. Defined in bulk_copy.cc.
void copyBackward(void* dst, const void* src, size_t n) noexcept;

// memcpy, but never at the slow distance.
inline void bulkCopy(void* dst, const void* src, size_t n) noexcept {
  if (aliasedCopy(dst, src, n)) [[unlikely]] {
    copyBackward(dst, src, n);
    return;
  }
  if (n != 0) std::memcpy(dst, src, n);
}

// out.insert(out.end(), src, src + n) for a container of bytes (std::vector<uint8_t>,
// std::string), but never at the slow distance. Where the new bytes' place would meet it, they
// are zero-filled first (resize) and then copied: a fill of cache-resident bytes costs a small
// part of the slow copy.
template <class C>
void appendBulk(C& out, const void* src, size_t n) {
  using E = typename C::value_type;
  static_assert(sizeof(E) == 1);
  const auto* p = static_cast<const E*>(src);
  const size_t at = out.size();
  if (n >= kAliasedCopyFrom) {
    // Grown as insert would grow it, so that the place of the new bytes is known before the copy.
    if (out.capacity() - at < n) out.reserve(std::max(at + n, 2 * out.capacity()));
    if (aliasedCopy(out.data() + at, src, n)) [[unlikely]] {
      out.resize(at + n);
      copyBackward(out.data() + at, src, n);
      return;
    }
  }
  out.insert(out.end(), p, p + n);
}

// out.assign(src, src + n), as appendBulk.
template <class C>
void assignBulk(C& out, const void* src, size_t n) {
  out.clear();
  appendBulk(out, src, n);
}

}  // namespace lrpc::detail
