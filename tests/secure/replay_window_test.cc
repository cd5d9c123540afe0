// The RFC 6479 replay window: in order, out of order, duplicates, too old, block jumps, and
// counters near 2^64.
#include <gtest/gtest.h>

#include <limits>

#include "transport/secure/replay_window.h"

namespace lrpc::secure {
namespace {

using V = ReplayWindow::Verdict;
constexpr uint64_t kW = ReplayWindow::kWindow;

TEST(SecureReplayWindow, InOrderAndDuplicates) {
  ReplayWindow w;
  for (uint64_t c = 0; c < 1000; ++c) {
    ASSERT_EQ(w.check(c), V::kFresh) << c;
    ASSERT_TRUE(w.accept(c));
    ASSERT_EQ(w.check(c), V::kDuplicate) << c;
    ASSERT_FALSE(w.accept(c));
  }
  EXPECT_EQ(w.highest(), 999u);
}

TEST(SecureReplayWindow, OutOfOrderWithinTheWindow) {
  ReplayWindow w;
  ASSERT_TRUE(w.accept(kW + 100));
  // Every counter still inside the window arrives late, in reverse, exactly once.
  for (uint64_t c = kW + 99; c > 100; --c) {
    ASSERT_TRUE(w.accept(c)) << c;
    ASSERT_FALSE(w.accept(c)) << c;
  }
  EXPECT_EQ(w.check(100), V::kTooOld);  // highest - 100 == kW
  EXPECT_FALSE(w.accept(100));
  EXPECT_EQ(w.check(kW + 100), V::kDuplicate);
}

TEST(SecureReplayWindow, TooOldIsRefusedAtTheExactEdge) {
  ReplayWindow w;
  ASSERT_TRUE(w.accept(10000));
  EXPECT_EQ(w.check(10000 - kW + 1), V::kFresh);
  EXPECT_EQ(w.check(10000 - kW), V::kTooOld);
  EXPECT_EQ(w.check(0), V::kTooOld);
}

TEST(SecureReplayWindow, JumpsAcrossBlockBoundariesClearOnlyWhatTheyPass) {
  ReplayWindow w;
  ASSERT_TRUE(w.accept(63));
  ASSERT_TRUE(w.accept(64));  // next block
  EXPECT_EQ(w.check(63), V::kDuplicate);
  ASSERT_TRUE(w.accept(64 * 5 + 7));  // several blocks ahead
  EXPECT_EQ(w.check(63), V::kDuplicate) << "still within the window, still remembered";
  EXPECT_EQ(w.check(64), V::kDuplicate);
  EXPECT_EQ(w.check(65), V::kFresh);
  EXPECT_EQ(w.check(64 * 3), V::kFresh) << "a block passed over is clear";
  // A jump of more than a whole ring forgets everything older and leaves no stale bits: the
  // slot that held counter 63 is reused for a counter that was never seen.
  const uint64_t far = 63 + 64 * ReplayWindow::kBlocks * 3;
  ASSERT_TRUE(w.accept(far));
  EXPECT_EQ(w.check(63), V::kTooOld);
  for (uint64_t c = far - kW + 1; c < far; ++c) ASSERT_EQ(w.check(c), V::kFresh) << c;
}

TEST(SecureReplayWindow, EveryJumpSizeKeepsExactlyTheWindow) {
  // For jumps of 1 .. two rings, every counter of the previous window is either a duplicate
  // (if still inside) or too old; nothing that was accepted reads as fresh.
  for (uint64_t jump = 1; jump <= 2 * kW + 130; jump += 37) {
    ReplayWindow w;
    const uint64_t base = 5000;
    for (uint64_t c = base - 200; c <= base; ++c) ASSERT_TRUE(w.accept(c));
    ASSERT_TRUE(w.accept(base + jump));
    for (uint64_t c = base - 200; c <= base; ++c) {
      V v = w.check(c);
      if (base + jump - c >= kW) {
        ASSERT_EQ(v, V::kTooOld) << jump << " " << c;
      } else {
        ASSERT_EQ(v, V::kDuplicate) << jump << " " << c;
      }
    }
    for (uint64_t c = base + 1; c < base + jump; ++c) {
      if (base + jump - c < kW) {
        ASSERT_EQ(w.check(c), V::kFresh) << jump << " " << c;
      }
    }
  }
}

TEST(SecureReplayWindow, CountersNearTwoToTheSixtyFour) {
  ReplayWindow w;
  const uint64_t top = std::numeric_limits<uint64_t>::max();
  ASSERT_TRUE(w.accept(top - 5));
  ASSERT_TRUE(w.accept(top - 1));
  ASSERT_TRUE(w.accept(top - 3));
  EXPECT_EQ(w.check(top - 5), V::kDuplicate);
  EXPECT_EQ(w.check(top - 4), V::kFresh);
  EXPECT_EQ(w.check(top), V::kFresh);
  ASSERT_TRUE(w.accept(top));
  EXPECT_EQ(w.check(top), V::kDuplicate);
  EXPECT_EQ(w.check(top - kW), V::kTooOld);
  EXPECT_EQ(w.check(0), V::kTooOld);
  EXPECT_EQ(w.highest(), top);
}

}  // namespace
}  // namespace lrpc::secure
