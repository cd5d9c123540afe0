// $Lrpc.progressive arguments on the same host: the handler is called while the client still
// streams the argument and reads it part by part (lrpc::awaitArgument). Here, in all three
// transfer modes: every size, inline or streamed, read in even and uneven parts, hashes right;
// the handler runs before the client has written the second half; a client that stops writing
// ends the handler's wait with kBadFrame; and awaitArgument's own bounds.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "every_type.lrpc.h"
#include "runtime/exporter.h"
#include "runtime/import.h"
#include "runtime/shared_buffer.h"
#include "tests/integration/harness.h"
#include "tests/integration/per_mode.h"
#include "tests/testing/every_type_impl.h"
#include "tests/testing/pattern.h"
#include "tests/testing/progressive_consumer.h"

namespace lrpc::testing {
namespace {

using Clock = std::chrono::steady_clock;

// The server in this process, so that the test sees what its handler saw and when.
class ProgressiveArg : public PerModeTest {
 protected:
  void SetUp() override {
    ExporterOptions eo;
    eo.dir = dir_.path();
    eo.maxOutOfBandBytes = uint64_t{64} << 20;
    exporter_ = std::make_unique<Exporter>(eo);
    ASSERT_TRUE(exporter_->add("progressive", Progressive::kDescriptor, static_cast<Progressive::Server*>(&impl_)).isOk());
    Result<Progressive::Client> c = lrpc::import<Progressive>("progressive", opts());
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    client_ = std::make_unique<Progressive::Client>(std::move(*c));
  }
  void TearDown() override {
    client_.reset();
    exporter_.reset();
  }

  // A call through a SharedBuffer whose payload of n bytes is started, then counted final half
  // by half; `between` runs after the first half is counted.
  template <class Between>
  Status halves(size_t n, uint32_t seed, uint32_t step, Between between) {
    Result<SharedBuffer> buf = SharedBuffer::allocate(*client_->binding(), Progressive::kConsume, n);
    if (!buf.isOk()) return buf.status();
    const std::vector<uint8_t> sent = pattern(n, seed);
    Progressive::ConsumeArgsFrame frame{};
    frame.d = VarRef{0, static_cast<uint32_t>(n)};
    frame.step = step;
    std::memcpy(buf->args(), &frame, sizeof frame);
    std::memcpy(buf->bytes().data(), sent.data(), n / 2);
    if (!buf->start()) return Status(Errc::kApplication, "the payload was not streamed");
    buf->ready(n / 2);
    between();
    std::memcpy(buf->bytes().data() + n / 2, sent.data() + n / 2, n - n / 2);
    buf->ready(n);
    if (Status s = buf->invoke(); !s.isOk()) return s;
    Progressive::ConsumeResultsFrame results;
    std::memcpy(&results, buf->results(), sizeof results);
    if (results.hash != fnv1a(sent) || results.n != n) return Status(Errc::kApplication, "wrong hash or length");
    return {};
  }

  ProgressiveConsumer impl_;
  std::unique_ptr<Exporter> exporter_;
  std::unique_ptr<Progressive::Client> client_;
};

TEST_P(ProgressiveArg, EverySizeAndStepReadsEveryByte) {
  const size_t sizes[] = {0, 1, 100, 4000, (size_t{256} << 10) - 1, size_t{256} << 10, 300'001, (size_t{3} << 20) + 5,
                          size_t{64} << 20};
  uint32_t seed = 80;
  for (size_t n : sizes) {
    const std::vector<uint8_t> sent = pattern(n, ++seed);
    for (uint32_t step : {0u, 1000u, 65536u, 100'003u}) {
      if (n > (size_t{4} << 20) && step < 65536u) continue;  // a 64 MiB value in 1000-byte waits is only slow
      Result<Progressive::ConsumeResults> r = client_->consume(sent, step);
      ASSERT_TRUE(r.isOk()) << n << "/" << step << ": " << r.status().toString();
      EXPECT_EQ(r->n, n);
      EXPECT_EQ(r->hash, fnv1a(sent)) << n << "/" << step;
    }
  }
  EXPECT_EQ(impl_.lastError.load(), 0);
}

// The handler is entered while the second half is not yet written: were it called only once
// the argument is whole, the wait below would time out.
TEST_P(ProgressiveArg, TheHandlerRunsBeforeTheArgumentIsWhole) {
  bool early = false;
  Status s = halves(size_t{2} << 20, 90, 65536, [&] {
    const auto until = Clock::now() + std::chrono::seconds(10);
    while (impl_.entered.load() == 0 && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    early = impl_.entered.load() == 1;
  });
  EXPECT_TRUE(early) << "the handler did not run before the argument's second half was written";
  EXPECT_TRUE(s.isOk()) << s.toString();
}

// A client that counts half its argument final, then stops for longer than the stall limit:
// the handler's wait ends with kBadFrame, and so does the call.
TEST_P(ProgressiveArg, AClientThatStopsWritingEndsTheHandlersWait) {
  Status s = halves(size_t{1} << 20, 91, 65536, [] { std::this_thread::sleep_for(std::chrono::milliseconds(1600)); });
  EXPECT_EQ(s.code(), Errc::kBadFrame) << s.toString();
  EXPECT_EQ(impl_.lastError.load(), static_cast<int>(Errc::kBadFrame));
  // The binding still serves.
  const std::vector<uint8_t> sent = pattern(500'000, 92);
  Result<Progressive::ConsumeResults> r = client_->consume(sent, 4096);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->hash, fnv1a(sent));
}

INSTANTIATE_TEST_SUITE_P(Modes, ProgressiveArg, ::testing::ValuesIn(kTransferModes), modeTestName);

TEST(AwaitArgument, OutsideAHandlerBytesAreFinalAndTheSpanBoundsTheWait) {
  const std::vector<uint8_t> bytes = pattern(100, 1);
  EXPECT_TRUE(lrpc::awaitArgument(bytes, 0).isOk());
  EXPECT_TRUE(lrpc::awaitArgument(bytes, 100).isOk());
  EXPECT_EQ(lrpc::awaitArgument(bytes, 101).code(), Errc::kInvalidArgument);
}

}  // namespace
}  // namespace lrpc::testing
