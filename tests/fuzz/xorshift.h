// The fuzz twins' random numbers: deterministic (xorshift64), so that a failing input
// reproduces from its seed on any machine and standard library.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lrpc::testing {

class XorShift {
 public:
  explicit XorShift(uint64_t seed) : s_(seed | 1) {}
  uint64_t next() {
    s_ ^= s_ << 13;
    s_ ^= s_ >> 7;
    s_ ^= s_ << 17;
    return s_;
  }
  size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(next() % n); }

 private:
  uint64_t s_;
};

}  // namespace lrpc::testing
