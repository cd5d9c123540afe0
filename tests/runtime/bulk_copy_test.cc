#include "runtime/base/bulk_copy.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace lrpc::detail {
namespace {

uintptr_t addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// A source of n patterned bytes whose address lies `distance` bytes (modulo 4 KiB) before `dst`.
const uint8_t* sourceAt(std::vector<uint8_t>& storage, const void* dst, size_t distance, size_t n) {
  storage.assign(n + 8192, 0);
  const size_t k = (addr(dst) - distance - addr(storage.data())) & 4095;
  uint8_t* src = storage.data() + k;
  for (size_t i = 0; i < n; ++i) src[i] = static_cast<uint8_t>(i * 131 + (i >> 8) + 7);
  return src;
}

constexpr size_t kDistances[] = {0, 1, 8, 15, 16, 17, 31, 32, 33, 63, 64, 2048, 4080, 4095};
constexpr size_t kSizes[] = {0, 1, 15, 63, 64, 65, 2047, 2048, 2049, 4096 + 13, 65536 + 7, 300000};

TEST(BulkCopy, SlowDistanceIsOneToThirtyOneBytesPastFromTwoKiB) {
  alignas(64) static uint8_t page[8192];
  for (size_t d = 0; d < 4096; ++d) {
    EXPECT_EQ(aliasedCopy(page + d, page, 4096), d >= 1 && d <= 31) << d;
    EXPECT_FALSE(aliasedCopy(page + d, page, kAliasedCopyFrom - 1)) << d;
  }
  EXPECT_TRUE(aliasedCopy(page + 4096 + 16, page, 2048));  // modulo 4 KiB
}

TEST(BulkCopy, CopiesEveryByteAndNothingElseAtEveryDistance) {
  for (size_t d : kDistances) {
    for (size_t n : kSizes) {
      std::vector<uint8_t> into(n + 8192 + 128, 0xEE);
      uint8_t* dst = into.data() + 64 + ((4096 - (addr(into.data() + 64) & 4095)) & 4095);
      std::vector<uint8_t> storage;
      const uint8_t* src = sourceAt(storage, dst, d, n);
      ASSERT_EQ((addr(dst) - addr(src)) & 4095, d);
      bulkCopy(dst, src, n);
      ASSERT_EQ(std::vector<uint8_t>(dst, dst + n), std::vector<uint8_t>(src, src + n)) << "d=" << d << " n=" << n;
      EXPECT_EQ(dst[-1], 0xEE) << "d=" << d << " n=" << n;
      EXPECT_EQ(dst[n], 0xEE) << "d=" << d << " n=" << n;
    }
  }
}

TEST(BulkCopy, CopyBackwardWritesWhatMemcpyWrites) {
  for (size_t n : kSizes) {
    std::vector<uint8_t> storage;
    std::vector<uint8_t> a(n + 2, 0xEE);
    const uint8_t* src = sourceAt(storage, a.data() + 1, 16, n);
    copyBackward(a.data() + 1, src, n);
    EXPECT_EQ(std::vector<uint8_t>(a.begin() + 1, a.end() - 1), std::vector<uint8_t>(src, src + n)) << n;
    EXPECT_EQ(a.front(), 0xEE);
    EXPECT_EQ(a.back(), 0xEE);
  }
}

// The vector a large Data value lands in, appended in pieces as a streamed tail is, with the
// pieces' source placed at the slow distance from where they land, and at a harmless one.
template <class C>
void appendsInPieces(size_t distance) {
  constexpr size_t kPiece = 65536 + 5;
  constexpr int kPieces = 4;
  C out;
  out.reserve(kPiece * kPieces);
  std::vector<uint8_t> storage;
  std::vector<uint8_t> expected;
  for (int i = 0; i < kPieces; ++i) {
    void* dst = out.data() + out.size();
    const uint8_t* src = sourceAt(storage, dst, distance, kPiece);
    EXPECT_EQ(aliasedCopy(dst, src, kPiece), distance >= 1 && distance <= 31);
    expected.insert(expected.end(), src, src + kPiece);
    appendBulk(out, src, kPiece);
    ASSERT_EQ(out.size(), expected.size());
  }
  EXPECT_EQ(0, std::memcmp(out.data(), expected.data(), expected.size()));
}

TEST(BulkCopy, AppendsAVectorAtEveryDistance) {
  for (size_t d : kDistances) appendsInPieces<std::vector<uint8_t>>(d);
}

TEST(BulkCopy, AppendsAStringAtEveryDistance) {
  for (size_t d : kDistances) appendsInPieces<std::string>(d);
}

// Growth from empty, where the place of the bytes is known only once the vector has grown.
TEST(BulkCopy, AssignReplacesAndGrows) {
  for (size_t n : kSizes) {
    std::vector<uint8_t> src(n);
    for (size_t i = 0; i < n; ++i) src[i] = static_cast<uint8_t>(i ^ 0x5A);
    std::vector<uint8_t> out(7, 1);
    assignBulk(out, src.data(), n);
    EXPECT_EQ(out, src) << n;
    std::string text = "old";
    assignBulk(text, src.data(), n);
    EXPECT_EQ(text, std::string(src.begin(), src.end())) << n;
  }
}

}  // namespace
}  // namespace lrpc::detail
