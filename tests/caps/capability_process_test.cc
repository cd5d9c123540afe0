// Capabilities across real processes, on both paths: a server process on the same host (the
// calls on a received capability use A-stacks of the same binding), and a server in another
// network namespace over UDP (the same session). Release on drop, on a client's death, and
// the per-binding bound.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "runtime/exporter.h"
#include "runtime/import.h"
#include "tests/caps/caps_impl.h"
#include "tests/integration/harness.h"
#include "tests/transport/net_harness.h"
#include "transport/client.h"
#include "transport/server.h"

namespace lrpc::testing {
namespace {

using net::testing::ForkedServer;
using net::testing::NetnsPair;
using net::testing::runIn;

// A server process exporting a fresh Factory as "factory" in `dir`.
class FactoryProcess {
 public:
  FactoryProcess(const std::string& dir, uint32_t maxCapabilities = CapTable::kDefaultLimit)
      : child_([&] {
          FactoryImpl impl;
          ServerOptions o;
          o.dir = dir;
          o.maxCapabilities = maxCapabilities;
          Exporter exporter(o);
          KeeperImpl keeper;
          const bool ok = exporter.add<caps::Factory>("factory", impl).isOk() &&
                          exporter.add<caps::Keeper>("keeper", keeper).isOk();
          ready_.putByte(ok ? 'k' : 'x');
          if (!ok) return 1;
          for (;;) ::pause();
        }) {
    char c = 0;
    up_ = ready_.get(&c, 1) && c == 'k';
  }
  bool up() const { return up_; }

 private:
  Pipe ready_;
  Child child_;
  bool up_ = false;
};

Result<caps::Factory::Client> importFactory(const std::string& dir, TransferMode mode = TransferMode::kAdaptive) {
  ImportOptions io;
  io.dir = dir;
  io.mode = mode;
  return lrpc::import<caps::Factory>("factory", io);
}

class SameHost : public ::testing::TestWithParam<TransferMode> {};

TEST_P(SameHost, CapabilitiesRoundTrip) {
  TempDir dir;
  FactoryProcess server(dir.path());
  ASSERT_TRUE(server.up());
  auto factory = importFactory(dir.path(), GetParam());
  ASSERT_TRUE(factory.isOk()) << factory.status().toString();
  checkCapabilities(*factory);
  ImportOptions io;
  io.dir = dir.path();
  io.mode = GetParam();
  auto keeper = lrpc::import<caps::Keeper>("keeper", io);
  ASSERT_TRUE(keeper.isOk()) << keeper.status().toString();
  checkNestedCapabilities(*keeper);
}

INSTANTIATE_TEST_SUITE_P(Modes, SameHost,
                         ::testing::Values(TransferMode::kAdaptive, TransferMode::kSpin, TransferMode::kBlock));

TEST(SameHostCaps, ManyThreadsCallCapabilities) {
  TempDir dir;
  FactoryProcess server(dir.path());
  ASSERT_TRUE(server.up());
  auto factory = importFactory(dir.path());
  ASSERT_TRUE(factory.isOk()) << factory.status().toString();
  auto shared = factory->make("shared", 0);
  ASSERT_TRUE(shared.isOk());
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        auto own = factory->make("own", i);
        if (!own.isOk() || !own->add(1).isOk() || !shared->add(1).isOk()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(*shared->add(0), 800);
  EXPECT_EQ(*factory->live(), 1u);  // every `own` was released when it went out of scope
}

TEST(SameHostCaps, ObjectsOfADeadClientAreReleased) {
  TempDir dir;
  FactoryProcess server(dir.path());
  ASSERT_TRUE(server.up());
  Pipe held;
  Child client([&] {
    auto factory = importFactory(dir.path());
    if (!factory.isOk()) return 1;
    std::vector<caps::Counter::Client> kept;
    for (int i = 0; i < 5; ++i) {
      auto c = factory->make("kept", i);
      if (!c.isOk()) return 2;
      kept.push_back(std::move(*c));
    }
    held.putByte('k');
    for (;;) ::pause();
  });
  char c = 0;
  ASSERT_TRUE(held.get(&c, 1) && c == 'k');
  auto factory = importFactory(dir.path());
  ASSERT_TRUE(factory.isOk()) << factory.status().toString();
  EXPECT_EQ(*factory->live(), 5u);
  client.kill();
  client.wait();
  uint32_t live = 5;
  for (int i = 0; i < 500 && live != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    live = *factory->live();
  }
  EXPECT_EQ(live, 0u) << "the dead client's counters are still alive";
}

TEST(SameHostCaps, ABindingHoldsAtMostTheLimit) {
  TempDir dir;
  FactoryProcess server(dir.path(), 4);
  ASSERT_TRUE(server.up());
  auto factory = importFactory(dir.path());
  ASSERT_TRUE(factory.isOk()) << factory.status().toString();
  std::vector<caps::Counter::Client> kept;
  for (int i = 0; i < 4; ++i) {
    auto c = factory->make("k", i);
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    kept.push_back(std::move(*c));
  }
  auto over = factory->make("over", 0);
  EXPECT_EQ(over.status().code(), Errc::kResourceExhausted) << over.status().toString();
  kept.pop_back();  // released: room for one more
  EXPECT_TRUE(factory->make("again", 0).isOk());
  // Another binding has a table of its own.
  auto other = importFactory(dir.path());
  ASSERT_TRUE(other.isOk());
  EXPECT_TRUE(other->make("other", 0).isOk());
}

TEST(SameHostCaps, CallsFailCleanlyOnceTheServerDies) {
  TempDir dir;
  auto server = std::make_unique<FactoryProcess>(dir.path());
  ASSERT_TRUE(server->up());
  auto factory = importFactory(dir.path());
  ASSERT_TRUE(factory.isOk()) << factory.status().toString();
  auto counter = factory->make("c", 1);
  ASSERT_TRUE(counter.isOk());
  server.reset();  // kills the server process
  auto r = counter->add(1);
  EXPECT_EQ(r.status().code(), Errc::kPeerDied) << r.status().toString();
  counter = Status(Errc::kCancelled);  // the release finds the server gone: no hang, no crash
}

uint16_t serveFactory(const std::string& bind) {
  auto* impl = new FactoryImpl;  // live until the child exits
  net::ServerOptions o;
  o.maxCapabilities = 4;
  auto* server = new net::UdpServer(o);
  auto* keeper = new KeeperImpl;
  if (!server->add<caps::Factory>("factory", *impl).isOk() || !server->add<caps::Keeper>("keeper", *keeper).isOk()) {
    return 0;
  }
  auto port = server->bind(bind);
  if (!port.isOk() || !server->start().isOk()) return 0;
  return *port;
}

TEST(TwoNamespaces, CapabilitiesRoundTrip) {
  NetnsPair pair;
  ASSERT_TRUE(pair.create().isOk()) << "network namespaces are needed for this test";
  ForkedServer server(pair.nsPath(true), pair.ipA() + ":0", serveFactory);
  ASSERT_NE(server.port(), 0) << "server did not start";
  const std::string uri = "udp://" + pair.ipA() + ":" + std::to_string(server.port()) + "/factory";
  runIn(pair.nsPath(false), [&] {
    auto factory = net::connect<caps::Factory>(uri);
    ASSERT_TRUE(factory.isOk()) << factory.status().toString();
    checkCapabilities(*factory);
    // The session's bound (4 here).
    std::vector<caps::Counter::Client> kept;
    for (int i = 0; i < 4; ++i) {
      auto c = factory->make("k", i);
      ASSERT_TRUE(c.isOk()) << c.status().toString();
      kept.push_back(std::move(*c));
    }
    EXPECT_EQ(factory->make("over", 0).status().code(), Errc::kResourceExhausted);
    kept.clear();
    EXPECT_EQ(*factory->live(), 0u);
    auto keeper = net::connect<caps::Keeper>(uri.substr(0, uri.rfind('/')) + "/keeper");
    ASSERT_TRUE(keeper.isOk()) << keeper.status().toString();
    checkNestedCapabilities(*keeper);
  });
}

}  // namespace
}  // namespace lrpc::testing
