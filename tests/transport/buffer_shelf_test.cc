// BufferShelf: which buffers it keeps, which it lends, and that it stays bounded.
#include "transport/buffer_shelf.h"

#include <gtest/gtest.h>

#include <cstring>

namespace lrpc::net {
namespace {

constexpr size_t kKiB = 1024, kMiB = 1024 * 1024;

// Gives an empty buffer heap storage of exactly `bytes` (it grows to the size asked first).
void fill(MessageBuffer& b, size_t bytes, std::byte with = std::byte{0}) {
  ASSERT_TRUE(b.resize(bytes).isOk());
  std::memset(b.data(), static_cast<int>(with), bytes);
}

TEST(BufferShelf, LendsTheSmallestKeptBufferThatFits) {
  BufferShelf shelf(16 * kMiB);
  MessageBuffer a, b;
  fill(a, 4 * kMiB, std::byte{1});
  fill(b, 1 * kMiB, std::byte{2});
  shelf.put(a);
  shelf.put(b);
  EXPECT_FALSE(a.onHeap());  // put always takes the storage
  EXPECT_EQ(a.size(), 0u);

  MessageBuffer want;
  ASSERT_TRUE(want.resize(3).isOk());
  std::memset(want.data(), 7, 3);
  shelf.lend(want, 512 * kKiB);
  EXPECT_EQ(want.capacity(), 1 * kMiB);  // the 1 MiB one, not the 4 MiB one
  ASSERT_EQ(want.size(), 3u);            // its bytes so far moved along
  EXPECT_EQ(want.data()[2], std::byte{7});

  MessageBuffer big;
  shelf.lend(big, 2 * kMiB);
  EXPECT_EQ(big.capacity(), 4 * kMiB);
  MessageBuffer none;
  shelf.lend(none, 1);  // the shelf is empty now
  EXPECT_FALSE(none.onHeap());
}

TEST(BufferShelf, KeepsAtMostTwoAndPrefersTheLarger) {
  BufferShelf shelf(16 * kMiB);
  for (size_t mib : {1, 2, 3, 8}) {
    MessageBuffer b;
    fill(b, mib * kMiB);
    shelf.put(b);
  }
  MessageBuffer x, y, z;
  shelf.lend(x, 1);
  shelf.lend(y, 1);
  shelf.lend(z, 1);
  EXPECT_EQ(x.capacity(), 3 * kMiB);
  EXPECT_EQ(y.capacity(), 8 * kMiB);
  EXPECT_FALSE(z.onHeap());
}

TEST(BufferShelf, RefusesTooSmallTooLargeAndEverythingWhenOff) {
  BufferShelf shelf(1 * kMiB);
  MessageBuffer small, huge, payloadPlusFrame;
  fill(small, BufferShelf::kKeepAtLeast - 1);
  fill(huge, 1 * kMiB + BufferShelf::kFrameSlack + 1);
  fill(payloadPlusFrame, 1 * kMiB + 16);
  shelf.put(small);
  shelf.put(huge);
  shelf.put(payloadPlusFrame);  // a 1 MiB payload with its fixed part is kept
  MessageBuffer got, again;
  shelf.lend(got, 1);
  shelf.lend(again, 1);
  EXPECT_EQ(got.capacity(), 1 * kMiB + 16);
  EXPECT_FALSE(again.onHeap());

  BufferShelf off(0);
  MessageBuffer b;
  fill(b, 1 * kMiB);
  off.put(b);
  MessageBuffer c;
  off.lend(c, 1);
  EXPECT_FALSE(c.onHeap());
}

}  // namespace
}  // namespace lrpc::net
