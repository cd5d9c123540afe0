// AeadContext's two implementations of AES-256-GCM (libsodium's for small messages, OpenSSL's
// above): each opens what the other sealed, byte for byte, on both sides of the size that
// separates them, and a tampered message opens with neither.
#include <gtest/gtest.h>

#include <numeric>
#include <utility>
#include <vector>

#include "transport/secure/crypto.h"

namespace lrpc::secure {
namespace {

constexpr size_t kSmall = AeadContext::kSmallMessage;

Key testKey() {
  Key k{};
  std::iota(k.begin(), k.end(), uint8_t{0x30});
  return k;
}

std::vector<uint8_t> bytes(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  std::iota(v.begin(), v.end(), seed);
  return v;
}

// One key, keyed for each direction.
class SecureAeadPair : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = AeadContext::forSealing(key);
    auto o = AeadContext::forOpening(key);
    ASSERT_TRUE(s.isOk() && o.isOk()) << s.status().toString() << o.status().toString();
    sealer = std::move(*s);
    opener = std::move(*o);
  }
  const Key key = testKey();
  AeadContext sealer;
  AeadContext opener;
};

TEST(SecureAead, SmallMessagesGoThroughLibsodiumWhereTheCpuAllowsIt) {
  auto ctx = AeadContext::forSealing(testKey());
  ASSERT_TRUE(ctx.isOk()) << ctx.status().toString();
  // libsodium's AES-256-GCM needs AES-NI and carry-less multiplication.
  __builtin_cpu_init();
  const bool cpuHasIt = __builtin_cpu_supports("aes") && __builtin_cpu_supports("pclmul");
  EXPECT_EQ(ctx->sealsSmallWithSodium(), cpuHasIt);
}

TEST_F(SecureAeadPair, EachImplementationOpensWhatTheOtherSealed) {
  const auto ad = bytes(16, 0xA0);
  uint64_t counter = 1;
  for (size_t n : {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{200}, kSmall - 1, kSmall, kSmall + 1,
                   size_t{1440}}) {
    const auto plain = bytes(n, static_cast<uint8_t>(n));
    const auto nonce = counterNonce(counter++);
    // The context (libsodium at or below kSmall) against the one-shot form (always OpenSSL).
    std::vector<uint8_t> sealed(n + kTagBytes), reference(n + kTagBytes);
    ASSERT_TRUE(sealer.seal(nonce, ad, plain, sealed).isOk()) << n;
    ASSERT_TRUE(aeadSeal(key, nonce, ad, plain, reference).isOk()) << n;
    EXPECT_EQ(sealed, reference) << "the same cipher text and tag, " << n << " bytes";
    std::vector<uint8_t> opened(n);
    ASSERT_TRUE(aeadOpen(key, nonce, ad, sealed, opened).isOk()) << n;
    EXPECT_EQ(opened, plain) << n;
    std::vector<uint8_t> again(n);
    ASSERT_TRUE(opener.open(nonce, ad, reference, again).isOk()) << n;
    EXPECT_EQ(again, plain) << n;
  }
}

TEST_F(SecureAeadPair, TamperedMessagesOpenWithNeitherAndLeaveNoBytes) {
  const auto ad = bytes(16, 0x11);
  for (size_t n : {size_t{64}, kSmall, kSmall + 1}) {
    const auto plain = bytes(n, 3);
    const auto nonce = counterNonce(7);
    std::vector<uint8_t> sealed(n + kTagBytes);
    ASSERT_TRUE(sealer.seal(nonce, ad, plain, sealed).isOk());
    for (size_t i : {size_t{0}, n / 2, n + kTagBytes - 1}) {
      auto bad = sealed;
      bad[i] ^= 0x40;
      std::vector<uint8_t> out(n, 0xEE);
      const Status s = opener.open(nonce, ad, bad, out);
      EXPECT_EQ(s.code(), Errc::kBadFrame) << n << " bytes, byte " << i << ": " << s.toString();
      EXPECT_EQ(out, std::vector<uint8_t>(n, 0)) << "no unauthenticated bytes handed out";
    }
    auto badAd = ad;
    badAd[0] ^= 1;
    std::vector<uint8_t> out(n);
    EXPECT_EQ(opener.open(nonce, badAd, sealed, out).code(), Errc::kBadFrame) << n;
    EXPECT_EQ(opener.open(counterNonce(8), ad, sealed, out).code(), Errc::kBadFrame) << n;
  }
}

}  // namespace
}  // namespace lrpc::secure
