#include "runtime/base/bulk_copy.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace lrpc::detail {

void copyBackward(void* dst, const void* src, size_t n) noexcept {
  auto* d = static_cast<std::byte*>(dst);
  const auto* s = static_cast<const std::byte*>(src);
#if defined(__SSE2__)
  // Intrinsics, not a loop of bytes: the compiler would turn that back into a call to memcpy.
  // Each block's four loads go before its four stores, and the blocks run from the end, so a
  // load's address is always below the stores still in flight: none waits on a false match of
  // the low 12 bits, which a forward copy at a distance of 1-31 bytes meets on every load.
  while (n >= 64) {
    n -= 64;
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + n + 48));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + n + 32));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + n + 16));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + n));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + n + 48), a);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + n + 32), b);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + n + 16), c);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + n), e);
  }
#endif
  // The last bytes (under 64), or all of them where there is no SSE2 and so no x86 rep movsb:
  // glibc copies those at full speed at any distance.
  if (n != 0) std::memcpy(d, s, n);
}

}  // namespace lrpc::detail
