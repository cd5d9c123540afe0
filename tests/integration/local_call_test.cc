// Same-host calls across two real processes, in every transfer mode.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "runtime/import.h"
#include "tests/integration/per_mode.h"
#include "tests/integration/servers.h"

namespace lrpc::testing {
namespace {

using LocalCallTest = PerModeTest;

TEST_P(LocalCallTest, NullAndAddRoundTrip) {
  TestServer server(dir_.path(), "svc");
  ASSERT_TRUE(server.ok());
  Result<TestService::Client> c = lrpc::import<TestService>("svc", opts());
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(c->null().isOk());
    Result<int32_t> sum = c->add(i, 2 * i);
    ASSERT_TRUE(sum.isOk()) << sum.status().toString();
    ASSERT_EQ(*sum, 3 * i);
  }
}

TEST_P(LocalCallTest, EchoInlineAndOutOfBand) {
  TestServer server(dir_.path(), "svc");
  ASSERT_TRUE(server.ok());
  Result<TestService::Client> c = lrpc::import<TestService>("svc", opts());
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  for (size_t n : {size_t{0}, size_t{1}, size_t{1500}, size_t{1501}, size_t{100'000}, size_t{3}}) {
    std::vector<uint8_t> in(n);
    std::iota(in.begin(), in.end(), static_cast<uint8_t>(n));
    Result<std::vector<uint8_t>> out = c->echo(in);
    ASSERT_TRUE(out.isOk()) << n << ": " << out.status().toString();
    ASSERT_EQ(*out, in) << n;
  }
}

TEST_P(LocalCallTest, HandlerThrowsIsServerFaultWithMessage) {
  TestServer server(dir_.path(), "svc");
  ASSERT_TRUE(server.ok());
  Result<TestService::Client> c = lrpc::import<TestService>("svc", opts());
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  Status s = c->fail();
  EXPECT_EQ(s.code(), Errc::kServerFault);
  EXPECT_NE(s.detail().find("the handler gave up"), std::string::npos) << s.toString();
  // The binding still works afterwards.
  EXPECT_TRUE(c->null().isOk());
  EXPECT_EQ(c->fail().code(), Errc::kServerFault);
}

INSTANTIATE_TEST_SUITE_P(Modes, LocalCallTest,
                         ::testing::ValuesIn(kTransferModes), modeTestName);

}  // namespace
}  // namespace lrpc::testing
