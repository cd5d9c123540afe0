// Limits and deadlines against a peer that takes too much or answers too late: each limit
// gives kResourceExhausted (and the server keeps serving within it), each deadline gives
// kDeadlineExceeded in bounded time (and the binding works again once the peer is back).
// The A-stack limit is tests/integration/concurrency_test (ExhaustedAStacksGiveResourceExhausted).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <thread>
#include <vector>

#include "runtime/import.h"
#include "tests/campaign/crash_peers.h"
#include "tests/integration/per_mode.h"
#include "tests/integration/servers.h"
#include "transport/client.h"

namespace lrpc::campaign {
namespace {

using lrpc::testing::kTransferModes;
using lrpc::testing::modeTestName;
using lrpc::testing::TempDir;
using lrpc::testing::TestServer;

class Limits : public ::testing::Test {
 protected:
  ImportOptions opts() const {
    ImportOptions o;
    o.dir = dir_.path();
    return o;
  }
  TempDir dir_;
};

TEST_F(Limits, ExhaustBindingsThenRecover) {
  ExporterOptions so;
  so.maxBindings = 3;
  TestServer server(dir_.path(), "svc", so);
  ASSERT_TRUE(server.ok());
  std::vector<TestService::Client> held;
  for (int i = 0; i < 3; ++i) {
    Result<TestService::Client> c = lrpc::import<TestService>("svc", opts());
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    held.push_back(*c);
  }
  Result<TestService::Client> extra = lrpc::import<TestService>("svc", opts());
  EXPECT_EQ(extra.status().code(), Errc::kResourceExhausted) << extra.status().toString();
  for (auto& c : held) EXPECT_EQ(*c.add(1, 1), 2);  // the bound ones are undisturbed
  held.pop_back();
  // Room again once the server has reclaimed the dropped binding.
  Result<TestService::Client> again = Status(Errc::kCancelled);
  for (int i = 0; i < 200 && !again.isOk(); ++i) {
    again = lrpc::import<TestService>("svc", opts());
    if (!again.isOk()) ::usleep(10'000);
  }
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_EQ(*again->add(2, 2), 4);
}

TEST_F(Limits, ExhaustServerThreads) {
  ExporterOptions so;
  so.maxServerThreads = 2;
  TestServer server(dir_.path(), "svc", so);
  ASSERT_TRUE(server.ok());
  Result<TestService::Client> c = lrpc::import<TestService>("svc", opts());
  ASSERT_TRUE(c.isOk());
  ASSERT_TRUE(c->null().isOk());    // thread 1
  ASSERT_TRUE(c->add(1, 2).isOk()); // thread 2
  EXPECT_EQ(c->echo(std::vector<uint8_t>(10, 1)).status().code(), Errc::kResourceExhausted);
  EXPECT_EQ(c->fail().code(), Errc::kResourceExhausted);
  EXPECT_TRUE(c->null().isOk());
  EXPECT_EQ(*c->add(3, 4), 7);
}

TEST_F(Limits, ExhaustOutOfBandLimit) {
  ExporterOptions so;
  so.maxOutOfBandBytes = 256 * 1024;
  TestServer server(dir_.path(), "svc", so);
  ASSERT_TRUE(server.ok());
  Result<TestService::Client> c = lrpc::import<TestService>("svc", opts());
  ASSERT_TRUE(c.isOk());
  EXPECT_EQ(c->echo(std::vector<uint8_t>(1 << 20, 1)).status().code(), Errc::kResourceExhausted);
  std::vector<uint8_t> ok(200 * 1024, 2);
  Result<std::vector<uint8_t>> r = c->echo(ok);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(*r, ok);
}

TEST(LimitsNet, ExhaustUdpSessionsEvictsTheOldest) {
  net::testing::Svc::Impl impl;
  net::ServerOptions so;
  so.maxSessions = 4;
  so.security.clearText = true;
  net::UdpServer server(so);
  ASSERT_TRUE(server.add("svc", net::testing::Svc::kDescriptor, &impl).isOk());
  auto port = server.bind("127.0.0.1:0");
  ASSERT_TRUE(port.isOk());
  ASSERT_TRUE(server.start().isOk());
  std::string uri = "udp+clear://127.0.0.1:" + std::to_string(*port) + "/svc";
  std::vector<std::shared_ptr<Binding>> bindings;
  for (int i = 0; i < 6; ++i) {
    auto b = net::connect(uri, net::testing::Svc::kDescriptor);
    ASSERT_TRUE(b.isOk()) << b.status().toString();
    ASSERT_TRUE(net::testing::callNull(**b).isOk());
    bindings.push_back(*b);
  }
  EXPECT_LE(server.sessionCount(), 4u);
  // The newest sessions work; the evicted ones are told so (reset) and fail with kPeerDied.
  for (int i = 2; i < 6; ++i) EXPECT_TRUE(net::testing::callNull(*bindings[i]).isOk()) << i;
  for (int i = 0; i < 2; ++i) EXPECT_EQ(net::testing::callNull(*bindings[i]).code(), Errc::kPeerDied) << i;
  // Their channels then open new sessions by themselves: the next calls go through.
  for (int i = 0; i < 2; ++i) EXPECT_TRUE(net::testing::callNull(*bindings[i]).isOk()) << i;
  EXPECT_LE(server.sessionCount(), 4u);
}

class DeadlineModes : public ::testing::TestWithParam<TransferMode> {};

TEST_P(DeadlineModes, DeadlineWhileServerStoppedThenRecovers) {
  TempDir dir;
  HeldServer server(dir.path());
  ASSERT_TRUE(server.ok());
  ImportOptions o;
  o.dir = dir.path();
  o.mode = GetParam();
  Result<TestService::Client> c = lrpc::import<TestService>("svc", o);
  ASSERT_TRUE(c.isOk());
  ASSERT_TRUE(c->add(1, 1).isOk());
  CallOptions quick;
  quick.timeout = std::chrono::milliseconds(50);
  server.signal(SIGSTOP);
  for (int i = 0; i < 5; ++i) {
    auto start = Clock::now();
    Result<int32_t> r = c->withOptions(quick).add(i, 1);
    int64_t ms = msSince(start);
    EXPECT_EQ(r.status().code(), Errc::kDeadlineExceeded) << r.status().toString();
    EXPECT_GE(ms, 45);
    EXPECT_LT(ms, 2000);
  }
  server.signal(SIGCONT);
  // The abandoned A-stacks come back once the late replies land; every answer is its own.
  for (int i = 0; i < 50; ++i) {
    Result<int32_t> r = c->add(i, 100);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    EXPECT_EQ(*r, i + 100);
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, DeadlineModes,
                         ::testing::ValuesIn(kTransferModes), modeTestName);

TEST(DeadlineNet, DeadlineWhileUdpServerStoppedThenRecovers) {
  UdpPeerServer server;
  ASSERT_NE(server.port(), 0);
  auto b = net::connect(server.uri(), net::testing::Svc::kDescriptor);
  ASSERT_TRUE(b.isOk());
  ASSERT_TRUE(net::testing::callNull(**b).isOk());
  server.signal(SIGSTOP);
  CallOptions quick;
  quick.timeout = std::chrono::milliseconds(50);
  for (uint64_t t = 1; t <= 3; ++t) {
    auto start = Clock::now();
    auto r = net::testing::callToken(**b, t, quick);
    EXPECT_EQ(r.status().code(), Errc::kDeadlineExceeded) << r.status().toString();
    EXPECT_LT(msSince(start), 2000);
  }
  server.signal(SIGCONT);
  for (uint64_t t = 10; t < 30; ++t) {
    auto r = net::testing::callToken(**b, t);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    EXPECT_EQ(*r, t * 3);
  }
  // An abandoned call may still run once on the server, never twice.
  for (uint64_t t = 1; t <= 3; ++t) {
    ServerReport rep;
    ASSERT_TRUE(server.report(t, &rep));
    EXPECT_LE(rep.tokenRuns, 1u);
  }
}

}  // namespace
}  // namespace lrpc::campaign
