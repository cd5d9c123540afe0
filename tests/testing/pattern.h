// Test payloads: xorshift bytes from a seed, content that a misplaced, stale or shifted page
// would not reproduce.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace lrpc::testing {

inline void fillPattern(std::span<std::byte> out, uint32_t seed) {
  uint32_t x = seed;
  for (auto& b : out) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    b = static_cast<std::byte>(x);
  }
}

inline std::vector<uint8_t> pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  fillPattern(std::as_writable_bytes(std::span<uint8_t>(v)), seed);
  return v;
}

}  // namespace lrpc::testing
