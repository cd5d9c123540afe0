// Sessions that time out (net::ServerOptions::sessionTimeout): a UDP client killed with the
// server's objects in hand costs the server nothing once its session has been silent that
// long, while a live client that holds objects keeps its session with keepalives, and one that
// holds none opens a new session by itself when it calls again; a call on a capability of an
// ended session never leaves; and the capabilities of a server that died fail cleanly. Across
// two network namespaces, in clear text and on secure sessions.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "runtime/capability.h"
#include "tests/caps/caps_impl.h"
#include "tests/integration/harness.h"
#include "tests/transport/net_harness.h"
#include "tests/transport/udp_server_child.h"
#include "transport/client.h"
#include "transport/secure/keys.h"
#include "transport/server.h"

namespace lrpc::testing {
namespace {

using net::testing::ForkedServer;

constexpr std::chrono::milliseconds kTimeout{300};

uint16_t serveFactory(const std::string& bind, const net::ServerSecurity& security) {
  net::ServerOptions o;
  o.sessionTimeout = kTimeout;
  o.security = security;
  return net::testing::startUdpServer(
      bind, o, [](net::UdpServer& server) { return server.add<caps::Factory>("factory", *new FactoryImpl).isOk(); });
}

net::UdpChannel::Stats statsOf(const caps::Factory::Client& factory) {
  auto* channel = dynamic_cast<net::UdpChannel*>(factory.binding()->channel);
  return channel == nullptr ? net::UdpChannel::Stats{} : channel->stats();
}

// Sleeps `d` without a call on any channel of this process.
void stayQuiet(std::chrono::milliseconds d) { std::this_thread::sleep_for(d); }

class SessionTimeout : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(pair_.create().isOk()) << "network namespaces are needed for this test";
    net::ServerSecurity security;
    std::string query;
    if (GetParam()) {
      auto key = secure::KeyPair::generate();
      ASSERT_TRUE(key.isOk()) << key.status().toString();
      security.keyPair = *key;
      security.anyClient = true;
      query = "?key=" + key->publicKey().toText();
    } else {
      security.clearText = true;
    }
    server_.emplace(pair_.nsPath(true), pair_.ipA() + ":0", [&](const std::string& b) { return serveFactory(b, security); });
    ASSERT_NE(server_->port(), 0) << "server did not start";
    uri_ = std::string(GetParam() ? "udp://" : "udp+clear://") + pair_.ipA() + ":" + std::to_string(server_->port()) +
           "/factory" + query;
  }

  NetnsPair pair_;
  std::optional<ForkedServer> server_;
  std::string uri_;
};

TEST_P(SessionTimeout, ObjectsOfAKilledClientGoWhenItsSessionTimesOut) {
  Pipe held;
  // Killed with its counters held: no bye, no release ever leaves it. Forked while this
  // process has one thread (ThreadSanitizer refuses a fork with more).
  Child client([&] {
    if (!enterNetns(pair_.nsPath(false))) return 3;
    return holdCountersUntilKilled(net::connect<caps::Factory>(uri_), [&] { held.putByte('k'); });
  });
  char c = 0;
  ASSERT_TRUE(held.get(&c, 1) && c == 'k');
  runIn(pair_.nsPath(false), [&] {
    auto factory = net::connect<caps::Factory>(uri_);
    ASSERT_TRUE(factory.isOk()) << factory.status().toString();
    ASSERT_EQ(*factory->live(), 5u);
    client.kill();
    client.wait();
    const auto killed = std::chrono::steady_clock::now();
    uint32_t live = 5;
    while (live != 0 && std::chrono::steady_clock::now() - killed < 20 * kTimeout) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      Result<uint32_t> r = factory->live();
      ASSERT_TRUE(r.isOk()) << r.status().toString();  // our own session, busy, lives on
      live = *r;
    }
    EXPECT_EQ(live, 0u) << "the killed client's counters outlived its session";
    EXPECT_EQ(statsOf(*factory).sessions, 1u);
  });
}

TEST_P(SessionTimeout, AQuietClientThatHoldsObjectsKeepsThem) {
  runIn(pair_.nsPath(false), [&] {
    auto factory = net::connect<caps::Factory>(uri_);
    ASSERT_TRUE(factory.isOk()) << factory.status().toString();
    auto counter = factory->make("quiet", 40);
    ASSERT_TRUE(counter.isOk()) << counter.status().toString();
    stayQuiet(4 * kTimeout);
    Result<int64_t> sum = counter->add(2);
    ASSERT_TRUE(sum.isOk()) << sum.status().toString();
    EXPECT_EQ(*sum, 42);
    EXPECT_EQ(*factory->live(), 1u);
    const net::UdpChannel::Stats stats = statsOf(*factory);
    EXPECT_EQ(stats.sessions, 1u) << "the session was kept, not replaced";
    EXPECT_GE(stats.keepalives, 3u);  // one a third of the timeout, over four of them
  });
}

TEST_P(SessionTimeout, AQuietClientThatHoldsNothingCallsOnANewSession) {
  runIn(pair_.nsPath(false), [&] {
    auto factory = net::connect<caps::Factory>(uri_);
    ASSERT_TRUE(factory.isOk()) << factory.status().toString();
    ASSERT_TRUE(factory->live().isOk());
    stayQuiet(4 * kTimeout);
    // The server has ended the session; the call goes out on a new one, and nothing fails.
    Result<uint32_t> live = factory->live();
    ASSERT_TRUE(live.isOk()) << live.status().toString();
    EXPECT_EQ(*live, 0u);
    const net::UdpChannel::Stats stats = statsOf(*factory);
    EXPECT_EQ(stats.sessions, 2u);
    EXPECT_EQ(stats.keepalives, 0u) << "a channel that holds nothing keeps nothing alive";
  });
}

// The last line of defence against an id of an ended session reaching a new one: a call that
// expects another session than the channel's (runtime/capability.h, ExpectSession) is refused
// when it gets its place in the channel, before anything is sent, and only that call.
TEST_P(SessionTimeout, ACallForAnEndedSessionNeverLeaves) {
  runIn(pair_.nsPath(false), [&] {
    auto factory = net::connect<caps::Factory>(uri_);
    ASSERT_TRUE(factory.isOk()) << factory.status().toString();
    auto* channel = dynamic_cast<net::UdpChannel*>(factory->binding()->channel);
    ASSERT_NE(channel, nullptr);
    const uint64_t calls = channel->stats().calls;
    {
      const detail::ExpectSession ended(channel, channel->sessionsEnded() + 1);
      Result<uint32_t> live = factory->live();
      EXPECT_EQ(live.status().code(), Errc::kPeerDied) << live.status().toString();
      EXPECT_EQ(channel->stats().calls, calls) << "the call went out";
      EXPECT_TRUE(factory->live().isOk()) << "the expectation outlived the call that took it";
    }
    {
      const detail::ExpectSession current(channel, channel->sessionsEnded());
      EXPECT_TRUE(factory->live().isOk());
    }
    EXPECT_EQ(channel->stats().calls, calls + 2);
  });
}

// The other side's death: calls on the capabilities a dead server gave fail with kPeerDied,
// the first once its retransmissions go unanswered, every later one at once (nothing sent),
// and dropping them then costs nothing.
TEST_P(SessionTimeout, CallsOnCapabilitiesOfADeadServerFailCleanly) {
  runIn(pair_.nsPath(false), [&] {
    net::ClientOptions co;
    co.initialRto = std::chrono::milliseconds(5);
    co.maxRto = std::chrono::milliseconds(20);
    co.maxRetries = 4;
    auto factory = net::connect<caps::Factory>(uri_, co);
    ASSERT_TRUE(factory.isOk()) << factory.status().toString();
    auto counter = factory->make("orphan", 1);
    auto other = factory->make("orphan", 2);
    ASSERT_TRUE(counter.isOk() && other.isOk());
    server_->kill();
    EXPECT_EQ(counter->add(1).status().code(), Errc::kPeerDied);
    // The channel knows its peer is dead now: later calls fail without sending anything.
    const uint64_t sends = statsOf(*factory).requestSends;
    EXPECT_EQ(other->add(1).status().code(), Errc::kPeerDied);
    EXPECT_EQ(factory->live().status().code(), Errc::kPeerDied);
    EXPECT_EQ(statsOf(*factory).requestSends, sends) << "a known-dead channel sent a request";
    counter = Status(Errc::kCancelled);
    other = Status(Errc::kCancelled);
  });
}

INSTANTIATE_TEST_SUITE_P(Sessions, SessionTimeout, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) { return p.param ? "secure" : "clear"; });

TEST(SessionTimeoutOptions, AreCheckedWhenTheServerBinds) {
  for (auto bad : {std::chrono::milliseconds(-1), std::chrono::milliseconds(29)}) {
    net::ServerOptions o;
    o.sessionTimeout = bad;
    o.security.clearText = true;
    net::UdpServer server(o);
    Result<uint16_t> port = server.bind("127.0.0.1:0");
    ASSERT_FALSE(port.isOk()) << bad.count();
    EXPECT_EQ(port.status().code(), Errc::kInvalidArgument);
    EXPECT_NE(port.status().detail().find("sessionTimeout"), std::string::npos) << port.status().toString();
  }
  net::ServerOptions never;
  never.sessionTimeout = std::chrono::milliseconds(0);
  never.security.clearText = true;
  net::UdpServer server(never);
  EXPECT_TRUE(server.bind("127.0.0.1:0").isOk());
}

}  // namespace
}  // namespace lrpc::testing
