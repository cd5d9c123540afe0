// Robustness across "two hosts" (the server forked into namespace A, the client in B): a slow
// handler stalls no one else, a handler slower than the client's give-up time still returns
// its result, a channel whose server died behind a packet drop fails later calls at once,
// a channel whose server restarted opens a new session for new calls, and a server whose every
// handler slot is taken still answers.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "tests/transport/net_harness.h"
#include "tests/transport/udp_server_child.h"
#include "tests/transport/test_service.h"
#include "transport/client.h"
#include "transport/server.h"

namespace lrpc::net {
namespace {

using testing::Svc;
using lrpc::testing::NetnsPair;
using lrpc::testing::runIn;
using Clock = std::chrono::steady_clock;

uint16_t serveSvc(const std::string& bind) {
  return testing::startUdpServer(bind, testing::clearTextServer(), [](UdpServer& server) {
    return server.add("svc", Svc::kDescriptor, new Svc::Impl).isOk();
  });
}

// The same service with one handler slot: a slow call takes all of it.
uint16_t serveSvcOneWorker(const std::string& bind) {
  ServerOptions so = testing::clearTextServer();
  so.workers = 1;
  return testing::startUdpServer(bind, so, [](UdpServer& server) {
    return server.add("svc", Svc::kDescriptor, new Svc::Impl).isOk();
  });
}

// A client that takes 10 + 20 + 40 + 40 + 40 ms of silence for a dead server.
ClientOptions givesUpAfter150ms() {
  ClientOptions co;
  co.initialRto = std::chrono::milliseconds(10);
  co.maxRto = std::chrono::milliseconds(40);
  co.maxRetries = 4;
  return co;
}

// A channel opened by hand, so that the test can read its counters.
struct Client {
  std::shared_ptr<UdpChannel> channel;
  std::shared_ptr<Binding> binding;
};

Result<Client> open(const std::string& hostPort, const ClientOptions& co = {}) {
  auto server = parseAddress(hostPort);
  if (!server) return server.status();
  EndpointOptions eo;
  eo.peer = *server;
  eo.connect = true;
  eo.receiveBuffers = 64;
  auto ep = openUdpEndpoint(eo);
  if (!ep) return ep.status();
  auto ch = UdpChannel::open(std::move(*ep), *server, "svc", Svc::kDescriptor, co);
  if (!ch) return ch.status();
  Client c;
  c.channel = *ch;
  c.binding = std::make_shared<Binding>(Svc::kDescriptor, c.channel.get(), c.channel);
  return c;
}

class NetRobust : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Status s = pair_.create(); !s.isOk()) {
      if (s.code() == Errc::kPermissionDenied) GTEST_SKIP() << "network namespaces refused: " << s.detail();
      FAIL() << s.toString();
    }
  }
  NetnsPair pair_;
};

TEST_F(NetRobust, SlowHandlerStallsNeitherOtherClientsNorItsOwnSession) {
  testing::ForkedServer server(pair_.nsPath(true), pair_.ipA() + ":0", serveSvc);
  ASSERT_NE(server.port(), 0);
  const std::string hostPort = pair_.ipA() + ":" + std::to_string(server.port());
  runIn(pair_.nsPath(false), [&] {
    auto slowClient = open(hostPort);
    auto other = open(hostPort);
    ASSERT_TRUE(slowClient.isOk()) << slowClient.status().toString();
    ASSERT_TRUE(other.isOk()) << other.status().toString();
    std::atomic<bool> slowReturned{false};
    Result<uint64_t> slowResult = Status(Errc::kCancelled, "not run");
    std::thread slow([&] {
      slowResult = testing::callSlowToken(*slowClient->binding, 1, 2000);
      slowReturned.store(true);
    });
    // Until the server counts token 1, its handler has not started.
    for (int i = 0; i < 400; ++i) {
      auto q = testing::queryToken(*other->binding, 1);
      ASSERT_TRUE(q.isOk()) << q.status().toString();
      if (*q == 1) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    // Another client's calls, and a call on the slow call's own session, all complete while
    // the slow handler still sleeps.
    std::thread sameSession([&] {
      auto r = testing::callToken(*slowClient->binding, 2);
      EXPECT_TRUE(r.isOk()) << r.status().toString();
      EXPECT_FALSE(slowReturned.load()) << "a call on the same session waited for the slow one";
    });
    for (uint64_t t = 100; t < 150; ++t) {
      auto r = testing::callToken(*other->binding, t);
      ASSERT_TRUE(r.isOk()) << r.status().toString();
      EXPECT_EQ(*r, t * 3);
    }
    EXPECT_FALSE(slowReturned.load()) << "another client's calls waited for the slow handler";
    sameSession.join();
    slow.join();
    ASSERT_TRUE(slowResult.isOk()) << slowResult.status().toString();
    EXPECT_EQ(*slowResult, 3u);
    // Its retransmissions (every RTO for two seconds) were recognised, not run again.
    EXPECT_GT(slowClient->channel->stats().retransmits, 0u);
    for (uint64_t t : {uint64_t{1}, uint64_t{2}, uint64_t{100}, uint64_t{149}}) {
      auto q = testing::queryToken(*other->binding, t);
      ASSERT_TRUE(q.isOk()) << q.status().toString();
      EXPECT_EQ(*q, 1u) << "token " << t;
    }
  });
}

TEST_F(NetRobust, HandlerSlowerThanTheGiveUpTimeReturnsItsResult) {
  testing::ForkedServer server(pair_.nsPath(true), pair_.ipA() + ":0", serveSvc);
  ASSERT_NE(server.port(), 0);
  const std::string hostPort = pair_.ipA() + ":" + std::to_string(server.port());
  runIn(pair_.nsPath(false), [&] {
    // The handler takes ten times the silence that would end a call as kPeerDied.
    const ClientOptions co = givesUpAfter150ms();
    auto c = open(hostPort, co);
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    auto r = testing::callSlowToken(*c->binding, 7, 1500);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    EXPECT_EQ(*r, 21u);
    EXPECT_GT(c->channel->stats().running, 0u);  // the server said "still running"
    auto q = testing::queryToken(*c->binding, 7);
    ASSERT_TRUE(q.isOk()) << q.status().toString();
    EXPECT_EQ(*q, 1u);
    // The caller's own deadline still ends such a call.
    auto d = testing::callSlowToken(*c->binding, 8, 1000, CallOptions{std::chrono::milliseconds(200)});
    EXPECT_EQ(d.status(), Errc::kDeadlineExceeded) << d.status().toString();
  });
}

// With every handler slot taken the server still reads its socket: a new client's session
// opens, a slow call's retransmissions are answered "still running" (so clients that give up
// after 150 ms of silence keep waiting), and the call that arrived meanwhile runs once the
// slot is free, exactly once.
TEST_F(NetRobust, EveryHandlerSlotTakenTheServerStillAnswers) {
  testing::ForkedServer server(pair_.nsPath(true), pair_.ipA() + ":0", serveSvcOneWorker);
  ASSERT_NE(server.port(), 0);
  const std::string hostPort = pair_.ipA() + ":" + std::to_string(server.port());
  runIn(pair_.nsPath(false), [&] {
    const ClientOptions co = givesUpAfter150ms();
    auto slowClient = open(hostPort, co);
    ASSERT_TRUE(slowClient.isOk()) << slowClient.status().toString();
    std::atomic<bool> slowReturned{false};
    Result<uint64_t> slowResult = Status(Errc::kCancelled, "not run");
    std::thread slow([&] {
      slowResult = testing::callSlowToken(*slowClient->binding, 7, 1500);
      slowReturned.store(true);
    });
    // The server has the call (it answered a retransmission "still running"): the slot is taken.
    const auto end = Clock::now() + std::chrono::seconds(10);
    while (slowClient->channel->stats().running == 0 && !slowReturned.load() && Clock::now() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    auto other = open(hostPort, co);
    ASSERT_TRUE(other.isOk()) << other.status().toString();
    EXPECT_FALSE(slowReturned.load()) << "the new session waited for the slow handler";
    auto r = testing::callToken(*other->binding, 100);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    EXPECT_EQ(*r, 300u);
    slow.join();
    ASSERT_TRUE(slowResult.isOk()) << slowResult.status().toString();
    EXPECT_EQ(*slowResult, 21u);
    for (uint64_t t : {uint64_t{7}, uint64_t{100}}) {
      auto q = testing::queryToken(*other->binding, t);
      ASSERT_TRUE(q.isOk()) << q.status().toString();
      EXPECT_EQ(*q, 1u) << "token " << t;
    }
  });
}

TEST_F(NetRobust, ServerDeadBehindADropFailsLaterCallsAtOnce) {
  testing::ForkedServer server(pair_.nsPath(true), pair_.ipA() + ":0", serveSvc);
  ASSERT_NE(server.port(), 0);
  const std::string hostPort = pair_.ipA() + ":" + std::to_string(server.port());
  runIn(pair_.nsPath(false), [&] {
    ClientOptions co;
    co.initialRto = std::chrono::milliseconds(10);
    co.maxRto = std::chrono::milliseconds(40);
    co.maxRetries = 5;
    auto c = open(hostPort, co);
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    ASSERT_TRUE(testing::callToken(*c->binding, 1).isOk());
    // Every datagram into A vanishes, so no ICMP tells the client; then the server dies.
    ASSERT_TRUE(pair_.nftA("add table inet lrpcdrop") &&
                pair_.nftA("add chain inet lrpcdrop in '{ type filter hook input priority 0; }'") &&
                pair_.nftA("add rule inet lrpcdrop in meta l4proto udp drop"))
        << "nft drop rule refused";
    server.kill();
    auto first = testing::callToken(*c->binding, 2);
    EXPECT_EQ(first.status(), Errc::kPeerDied) << first.status().toString();
    const auto before = c->channel->stats();
    const auto start = Clock::now();
    for (uint64_t t = 3; t < 13; ++t) {
      auto r = testing::callToken(*c->binding, t);
      EXPECT_EQ(r.status(), Errc::kPeerDied) << r.status().toString();
      EXPECT_EQ(r.status().detail(), first.status().detail());
    }
    // Nothing was sent for them, and they did not wait out retries (one call did above).
    const auto after = c->channel->stats();
    EXPECT_EQ(after.calls, before.calls);
    EXPECT_EQ(after.retransmits, before.retransmits);
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(1));
  });
}

TEST_F(NetRobust, RestartedServerGetsANewSessionForNewCalls) {
  auto first = std::make_unique<testing::ForkedServer>(pair_.nsPath(true), pair_.ipA() + ":0", serveSvc);
  const uint16_t port = first->port();
  ASSERT_NE(port, 0);
  const std::string hostPort = pair_.ipA() + ":" + std::to_string(port);
  runIn(pair_.nsPath(false), [&] {
    auto c = open(hostPort);
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    ASSERT_TRUE(testing::callToken(*c->binding, 1).isOk());
    first->kill();
    testing::ForkedServer second(pair_.nsPath(true), hostPort, serveSvc);
    ASSERT_EQ(second.port(), port);
    // The call that meets the new server went out on the old session: it may have run on
    // the old server, so it fails, and says so.
    auto lost = testing::callToken(*c->binding, 2);
    EXPECT_EQ(lost.status(), Errc::kPeerDied) << lost.status().toString();
    EXPECT_NE(lost.status().detail().find("may have run"), std::string::npos) << lost.status().detail();
    // Later calls go out on a new session, opened by the channel itself.
    for (uint64_t t = 3; t < 10; ++t) {
      auto r = testing::callToken(*c->binding, t);
      ASSERT_TRUE(r.isOk()) << r.status().toString();
      EXPECT_EQ(*r, t * 3);
    }
    EXPECT_EQ(c->channel->stats().sessions, 2u);
    // The new server ran each new call once, and never the lost one.
    for (uint64_t t : {uint64_t{2}, uint64_t{3}, uint64_t{9}}) {
      auto q = testing::queryToken(*c->binding, t);
      ASSERT_TRUE(q.isOk()) << q.status().toString();
      EXPECT_EQ(*q, t == 2 ? 0u : 1u) << "token " << t;
    }
  });
}

}  // namespace
}  // namespace lrpc::net
