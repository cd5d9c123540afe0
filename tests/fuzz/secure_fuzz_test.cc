// The fuzz entry over deterministic mutations (the libFuzzer binary explores further with
// LRPC_BUILD_FUZZ=ON): single-bit flips at every offset, truncations and extensions, and
// seeded random masks, for every message kind. No mutated message may be accepted.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "tests/fuzz/secure_fuzz.h"

namespace lrpc::secure {
namespace {

constexpr size_t kSizes[] = {148, 148, 76, 52, 80};  // hello, hello, reply, cookie reply, data

std::vector<uint8_t> input(int kind, size_t length) {
  std::vector<uint8_t> in(length + 1, 0);
  in[0] = static_cast<uint8_t>(kind);
  return in;
}

TEST(SecureFuzz, UnchangedMessagesAreAcceptedSoTheMutationsReachDeep) {
  // Kind 0 last: the unchanged hello is accepted once, then replays are refused.
  for (int kind : {2, 3, 4, 0}) {
    auto in = input(kind, kSizes[kind]);
    EXPECT_TRUE(fuzzOne(in.data(), in.size())) << kind;
  }
  // Kind 1 is the responder under load: an unchanged hello (no cookie) earns a cookie reply.
  auto in = input(1, kSizes[1]);
  EXPECT_FALSE(fuzzOne(in.data(), in.size()));
}

TEST(SecureFuzz, EveryBitFlipIsRefused) {
  for (int kind = 0; kind < kFuzzMessageKinds; ++kind) {
    for (size_t i = 0; i < kSizes[kind]; ++i) {
      for (int bit = 0; bit < 8; ++bit) {
        auto in = input(kind, kSizes[kind]);
        in[1 + i] = static_cast<uint8_t>(1u << bit);
        ASSERT_FALSE(fuzzOne(in.data(), in.size())) << "kind " << kind << " byte " << i << " bit " << bit;
      }
    }
  }
}

TEST(SecureFuzz, EveryOtherLengthIsRefused) {
  for (int kind = 0; kind < kFuzzMessageKinds; ++kind) {
    for (size_t n = 0; n < kSizes[kind] + 40; ++n) {
      if (n == kSizes[kind]) continue;
      auto in = input(kind, n);
      ASSERT_FALSE(fuzzOne(in.data(), in.size())) << "kind " << kind << " length " << n;
    }
  }
}

TEST(SecureFuzz, RandomMasksAreRefused) {
  std::mt19937 rng(12345);
  for (int round = 0; round < 4000; ++round) {
    const int kind = round % kFuzzMessageKinds;
    const size_t n = (round % 7 == 0) ? rng() % 300 : kSizes[kind];
    auto in = input(kind, n);
    // Sparse masks (a few bytes) as well as dense ones.
    const int touched = 1 + static_cast<int>(rng() % (round % 3 == 0 ? n + 1 : 4));
    bool changed = n != kSizes[kind];
    for (int t = 0; t < touched && n > 0; ++t) {
      uint8_t v = static_cast<uint8_t>(rng());
      in[1 + rng() % n] ^= v;
    }
    for (size_t i = 1; i < in.size(); ++i) changed = changed || in[i] != 0;
    if (!changed) continue;
    ASSERT_FALSE(fuzzOne(in.data(), in.size())) << "round " << round;
  }
}

}  // namespace
}  // namespace lrpc::secure
