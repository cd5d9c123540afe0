// lrpc::Duration: what call options and queue waits take in place of std::chrono, so that the
// generated-code contract does not include <chrono>. Every chrono duration a caller may write
// must arrive as the same number of nanoseconds.
#include "runtime/base/duration.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>

#include "runtime/stub_support.h"

namespace lrpc {
namespace {

using namespace std::chrono_literals;

TEST(Duration, ChronoDurationsBecomeNanoseconds) {
  EXPECT_EQ(Duration().count(), 0);
  EXPECT_EQ(Duration(1ns).count(), 1);
  EXPECT_EQ(Duration(250us).count(), 250'000);
  EXPECT_EQ(Duration(50ms).count(), 50'000'000);
  EXPECT_EQ(Duration(3s).count(), 3'000'000'000);
  EXPECT_EQ(Duration(2min).count(), 120'000'000'000);
  EXPECT_EQ(Duration(std::chrono::duration<double>(0.5)).count(), 500'000'000);
  EXPECT_EQ(Duration(std::chrono::duration<int64_t, std::ratio<1, 3>>(3)).count(), 1'000'000'000);
  EXPECT_EQ(Duration(-5ms).count(), -5'000'000);
}

TEST(Duration, HugeDurationsSaturateInsteadOfWrapping) {
  EXPECT_EQ(Duration(std::chrono::hours::max()).count(), INT64_MAX);
  EXPECT_EQ(Duration(std::chrono::hours::min()).count(), INT64_MIN);
  EXPECT_EQ(Duration(std::chrono::nanoseconds::max()).count(), INT64_MAX);
}

TEST(Duration, ComparesAndAdds) {
  EXPECT_LT(Duration(1ms), Duration(2ms));
  EXPECT_EQ(Duration(1s), Duration(1000ms));
  EXPECT_EQ((Duration(1s) + Duration(500ms)).count(), 1'500'000'000);
  EXPECT_EQ(Duration::nanoseconds(7).count(), 7);
}

TEST(Duration, CallOptionsTakeChronoLiterals) {
  CallOptions a{.timeout = 50ms};
  EXPECT_EQ(a.timeout.count(), 50'000'000);
  CallOptions b;
  b.timeout = std::chrono::seconds(2) + 1ms;
  EXPECT_EQ(b.timeout.count(), 2'001'000'000);
  EXPECT_EQ(CallOptions{}.timeout.count(), 0);  // no deadline
}

}  // namespace
}  // namespace lrpc
