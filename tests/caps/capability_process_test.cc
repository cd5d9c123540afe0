// Capabilities across real processes, on both paths: a server process on the same host (the
// calls on a received capability use A-stacks of the same binding), and a server in another
// network namespace over UDP (the same session). Release on drop, on a client's death, and
// the per-binding bound.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "runtime/base/mutex.h"
#include "runtime/capability.h"
#include "runtime/cap_table.h"
#include "runtime/exporter.h"
#include "runtime/import.h"
#include "tests/caps/caps_impl.h"
#include "tests/integration/exporter_process.h"
#include "tests/integration/harness.h"
#include "tests/integration/per_mode.h"
#include "tests/transport/net_harness.h"
#include "tests/transport/udp_server_child.h"
#include "transport/client.h"
#include "transport/server.h"

namespace lrpc::testing {
namespace {

using net::testing::ForkedServer;

// Exports a fresh Factory as "factory", with a Keeper and a Publisher, in `dir`.
ExporterOptions capabilityLimit(uint32_t maxCapabilities) {
  ExporterOptions o;
  o.maxCapabilities = maxCapabilities;
  return o;
}

class FactoryProcess : public ExporterProcess {
 public:
  explicit FactoryProcess(const std::string& dir, uint32_t maxCapabilities = CapTable::kDefaultLimit)
      : ExporterProcess(
            dir,
            [](Exporter& exporter) -> std::shared_ptr<void> {
              auto impls = std::make_shared<std::tuple<FactoryImpl, KeeperImpl, PublisherImpl, VaultImpl>>();
              const bool ok = exporter.add<caps::Factory>("factory", std::get<0>(*impls)).isOk() &&
                              exporter.add<caps::Keeper>("keeper", std::get<1>(*impls)).isOk() &&
                              exporter.add<caps::Publisher>("publisher", std::get<2>(*impls)).isOk() &&
                              exporter.add<caps::Vault>("vault", std::get<3>(*impls)).isOk();
              return ok ? impls : nullptr;
            },
            capabilityLimit(maxCapabilities)) {}
};

Result<caps::Factory::Client> importFactory(const std::string& dir, TransferMode mode = TransferMode::kAdaptive) {
  ImportOptions io;
  io.dir = dir;
  io.mode = mode;
  return lrpc::import<caps::Factory>("factory", io);
}

Result<caps::Publisher::Client> importPublisher(const std::string& dir, TransferMode mode = TransferMode::kAdaptive) {
  ImportOptions io;
  io.dir = dir;
  io.mode = mode;
  return lrpc::import<caps::Publisher>("publisher", io);
}

// A FactoryProcess in a fresh directory, up before the test starts.
class FactoryServer : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(server_->up()); }
  TempDir dir_;
  std::unique_ptr<FactoryProcess> server_ = std::make_unique<FactoryProcess>(dir_.path());
};
using SameHostCaps = FactoryServer;
using SameHostCallbacks = FactoryServer;

class SameHost : public ::testing::TestWithParam<TransferMode> {
 protected:
  // Starts a FactoryProcess in a fresh directory and imports its Publisher in this test's mode.
  void startPublisher() {
    server_.emplace(dir_.path());
    ASSERT_TRUE(server_->up());
    publisher_ = importPublisher(dir_.path(), GetParam());
    ASSERT_TRUE(publisher_.isOk()) << publisher_.status().toString();
  }
  TempDir dir_;
  std::optional<FactoryProcess> server_;
  Result<caps::Publisher::Client> publisher_ = Status(Errc::kNotFound, "not imported");
};

TEST_P(SameHost, CapabilitiesRoundTrip) {
  TempDir dir;
  FactoryProcess server(dir.path());
  ASSERT_TRUE(server.up());
  auto factory = importFactory(dir.path(), GetParam());
  ASSERT_TRUE(factory.isOk()) << factory.status().toString();
  checkCapabilities(*factory);
  checkAsyncCapabilities(*factory);
  checkSecondBase(*factory);
  ImportOptions io;
  io.dir = dir.path();
  io.mode = GetParam();
  auto keeper = lrpc::import<caps::Keeper>("keeper", io);
  ASSERT_TRUE(keeper.isOk()) << keeper.status().toString();
  checkNestedCapabilities(*keeper);
  auto vault = lrpc::import<caps::Vault>("vault", io);
  auto other = lrpc::import<caps::Vault>("vault", io);
  ASSERT_TRUE(vault.isOk() && other.isOk()) << vault.status().toString() << other.status().toString();
  checkUntypedCapabilities(*vault, *other, *factory);
}

// Waits (up to 5 s) for `live` to reach `want`: releases that follow a process's death arrive
// when its peer notices.
uint32_t settle(const std::atomic<uint32_t>& live, uint32_t want) {
  for (int i = 0; i < 500 && live.load() != want; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return live.load();
}

// Callbacks both ways through `publisher`: re-entrant, passed back, given a capability of the
// server's own, a derived interface, kept and called later, released when the server drops them.
void checkCallbacks(caps::Publisher::Client& publisher) {
  auto live = std::make_shared<std::atomic<uint32_t>>(0);
  auto impl = std::make_shared<ListenerImpl>(live, 100);
  auto listener = caps::Listener::Client::serve(impl);
  // The server calls back while this thread waits for its reply: a re-entrant call completes.
  auto pinged = publisher.ping(listener, 5);
  ASSERT_TRUE(pinged.isOk()) << pinged.status().toString();
  EXPECT_EQ(*pinged, 105);
  EXPECT_EQ(impl->calls.load(), 1u);
  // Passed back: the client gets its own object, and calls it in process.
  auto same = publisher.back(listener);
  ASSERT_TRUE(same.isOk()) << same.status().toString();
  EXPECT_EQ(*same->notify(1), 101);
  EXPECT_EQ(impl->calls.load(), 2u);
  // A capability the server serves, passed to the client's object: it calls the server.
  auto lent = publisher.lend(listener, 10);
  ASSERT_TRUE(lent.isOk()) << lent.status().toString();
  EXPECT_EQ(*lent, 11);
  // An object of a derived interface, passed where a Listener is declared, called back as one.
  auto loud = caps::LoudListener::Client::serve(std::make_shared<LoudListenerImpl>());
  auto loudPinged = publisher.ping(loud, 5);
  ASSERT_TRUE(loudPinged.isOk()) << loudPinged.status().toString();
  EXPECT_EQ(*loudPinged, 12);
  auto loudBack = publisher.back(loud);  // returned as a Listener: our own object again
  ASSERT_TRUE(loudBack.isOk()) << loudBack.status().toString();
  EXPECT_EQ(*loudBack->notify(1), 8);
  EXPECT_EQ(*publisher.lend(loud, 10), 17);
  // Kept by the server, called later, and released when the server drops it.
  auto other = caps::Listener::Client::serve(std::make_shared<ListenerImpl>(live, 1000));
  EXPECT_EQ(*publisher.subscribe(listener), 1u);
  EXPECT_EQ(*publisher.subscribe(other), 2u);
  auto published = publisher.publish(1);
  ASSERT_TRUE(published.isOk()) << published.status().toString();
  EXPECT_EQ(published->sum, 101 + 1001);
  EXPECT_EQ(published->answered, 2u);
  impl.reset();
  listener = caps::Listener::Client();
  same = Status(Errc::kCancelled);
  other = caps::Listener::Client();
  EXPECT_EQ(live->load(), 2u) << "the server still holds both";
  ASSERT_TRUE(publisher.clear().isOk());
  EXPECT_EQ(live->load(), 0u) << "released when the server dropped them";
}

// Subscribes a fresh listener of the client's and keeps no reference to it: the server's is
// the only one.
void subscribeOne(caps::Publisher::Client& publisher, const std::shared_ptr<std::atomic<uint32_t>>& live) {
  auto listener = caps::Listener::Client::serve(std::make_shared<ListenerImpl>(live, 0));
  auto kept = publisher.subscribe(listener);
  ASSERT_TRUE(kept.isOk()) << kept.status().toString();
}

// Objects of the client's callback host that replies (UDP) or returns (same host) released.
uint64_t releasesCarried(const caps::Publisher::Client& publisher) {
  const Binding& binding = *publisher.binding();
  if (!binding.remote) return binding.local->releasesCarried();
  auto* channel = dynamic_cast<net::UdpChannel*>(binding.channel);
  return channel == nullptr ? 0 : channel->stats().releasesCarried;
}

// A listener a handler drops is gone when the call returns, whatever the reply: over UDP its
// release rides on a reply of one datagram (kFlagReleases, 16 at most), and is a round trip of
// its own beyond that, or for an error, a reply of many datagrams and a deferred answer. On the
// same host one rides on the return (releasedId), ok or not, and the rest and a deferred
// answer's are calls of their own.
void checkReleasesBeforeEveryReturn(caps::Publisher::Client& publisher) {
  const bool udp = dynamic_cast<net::UdpChannel*>(publisher.binding()->channel) != nullptr;
  auto live = std::make_shared<std::atomic<uint32_t>>(0);
  ASSERT_NO_FATAL_FAILURE(subscribeOne(publisher, live));
  ASSERT_NO_FATAL_FAILURE(subscribeOne(publisher, live));
  EXPECT_EQ(live->load(), 2u);
  uint64_t carried = releasesCarried(publisher);
  ASSERT_TRUE(publisher.clear().isOk());
  EXPECT_EQ(live->load(), 0u) << "an ok reply";
  EXPECT_EQ(releasesCarried(publisher) - carried, udp ? 2u : 1u) << "both on clear's reply (one on the same host)";
  carried = releasesCarried(publisher);
  ASSERT_NO_FATAL_FAILURE(subscribeOne(publisher, live));
  EXPECT_EQ(publisher.clearThenFail().code(), Errc::kApplication);
  EXPECT_EQ(live->load(), 0u) << "an error";
  ASSERT_NO_FATAL_FAILURE(subscribeOne(publisher, live));
  auto pad = publisher.clearAndPad(64 * 1024);
  ASSERT_TRUE(pad.isOk()) << pad.status().toString();
  EXPECT_EQ(pad->size(), 64u * 1024);
  EXPECT_EQ(live->load(), 0u) << "a reply of many datagrams";
  ASSERT_NO_FATAL_FAILURE(subscribeOne(publisher, live));
  ASSERT_TRUE(publisher.clearLater().isOk());
  EXPECT_EQ(live->load(), 0u) << "a deferred answer";
  EXPECT_EQ(releasesCarried(publisher) - carried, udp ? 0u : 2u)
      << "over UDP none of those three replies carried them; on the same host the error and the long one";
  carried = releasesCarried(publisher);
  for (int i = 0; i < 20; ++i) ASSERT_NO_FATAL_FAILURE(subscribeOne(publisher, live));
  EXPECT_EQ(live->load(), 20u);
  ASSERT_TRUE(publisher.clear().isOk());
  EXPECT_EQ(live->load(), 0u) << "more than one reply carries";
  EXPECT_EQ(releasesCarried(publisher) - carried, udp ? 16u : 1u) << "16 on the reply, 4 by round trips (1 and 19)";
}

// A client's object whose notify waits until the test opens it.
class GateListener final : public caps::Listener::Server {
 public:
  Result<int64_t> notify(int64_t n) override {
    entered = true;
    for (int i = 0; i < 1000 && !open.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return n;
  }
  Result<int64_t> take(const caps::Counter::Client&) override { return 0; }
  std::atomic<bool> entered{false};
  std::atomic<bool> open{false};
};

// Over UDP: a call given up after its handler dropped our object, so that the release went on
// a reply nobody waits for. The channel's next calls read that reply and make it.
void checkReleaseOfAGivenUpCall(caps::Publisher::Client& publisher) {
  auto live = std::make_shared<std::atomic<uint32_t>>(0);
  ASSERT_NO_FATAL_FAILURE(subscribeOne(publisher, live));
  auto gate = std::make_shared<GateListener>();
  auto gateClient = caps::Listener::Client::serve(gate);
  uint64_t carried = 0;
  {
    auto pending = publisher.async().clearThenPing(gateClient, 1);
    // The handler has dropped the kept listener (noted for its reply) and waits for our gate.
    for (int i = 0; i < 500 && !gate->entered.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_TRUE(gate->entered.load());
    EXPECT_EQ(live->load(), 1u) << "its release waits for the reply";
    carried = releasesCarried(publisher);
    pending.cancel();  // one look finds no reply yet: given up
    gate->open = true;
  }
  // Each call leads the channel once at least, and so reads the given-up call's reply when it
  // has come.
  for (int i = 0; i < 500 && live->load() != 0; ++i) {
    ASSERT_TRUE(publisher.clear().isOk());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(live->load(), 0u) << "released by the reply of the call given up";
  // The kept listener's release, and the gate's too when the cancel reached the server only
  // after the handler had returned (else the gate's went by a round trip).
  const uint64_t late = releasesCarried(publisher) - carried;
  EXPECT_TRUE(late == 1 || late == 2) << late;
}

TEST_P(SameHost, CallbacksRoundTrip) {
  ASSERT_NO_FATAL_FAILURE(startPublisher());
  auto& publisher = publisher_;
  checkCallbacks(*publisher);
  checkClientObjectsInsideValues(*publisher);
  checkReleasesBeforeEveryReturn(*publisher);
}

// A client's object that records the thread each notify runs on; `sleep` slows each down.
class ThreadListener final : public caps::Listener::Server {
 public:
  explicit ThreadListener(std::chrono::milliseconds sleep = {}) : sleep_(sleep) {}
  Result<int64_t> notify(int64_t n) override {
    std::this_thread::sleep_for(sleep_);
    MutexLock lock(mu_);
    threads_.push_back(std::this_thread::get_id());
    return n + 1;
  }
  Result<int64_t> take(const caps::Counter::Client& counter) override { return counter.add(1); }
  // How many notifies ran on `id`, of how many.
  std::pair<size_t, size_t> ranOn(std::thread::id id) {
    MutexLock lock(mu_);
    return {static_cast<size_t>(std::count(threads_.begin(), threads_.end(), id)), threads_.size()};
  }

 private:
  std::chrono::milliseconds sleep_;
  Mutex mu_;
  std::vector<std::thread::id> threads_ LRPC_GUARDED_BY(mu_);
};

// `n` callback round trips through `listener`, each checked.
void pingTimes(caps::Publisher::Client& publisher, const caps::Listener::Client& listener, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    Result<int64_t> r = publisher.ping(listener, i);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    ASSERT_EQ(*r, i + 1);
  }
}

// A callback that serves a call its caller waits for runs on that caller's thread (a spinning
// one: in kSpin mode it never stops looking); one no waiting caller causes, on the callback
// binding's thread.
TEST_P(SameHost, ACallbackRunsOnTheThreadWaitingForTheCallThatCausedIt) {
  ASSERT_NO_FATAL_FAILURE(startPublisher());
  auto& publisher = publisher_;
  auto impl = std::make_shared<ThreadListener>();
  auto listener = caps::Listener::Client::serve(impl);
  const std::thread::id me = std::this_thread::get_id();
  ASSERT_NO_FATAL_FAILURE(pingTimes(*publisher, listener, 200));
  auto [mine, all] = impl->ranOn(me);
  EXPECT_EQ(all, 200u);
  if (GetParam() == TransferMode::kSpin) {
    EXPECT_EQ(mine, 200u) << "a spinning caller runs every callback it causes";
  }
  if (GetParam() == TransferMode::kBlock) {
    EXPECT_EQ(mine, 0u) << "a sleeping caller runs none";
  }

  // The server's callbacks to its subscribers serve publish(): its caller runs them too.
  ASSERT_TRUE(publisher->subscribe(listener).isOk());
  ASSERT_TRUE(publisher->subscribe(listener).isOk());
  Result<caps::Publisher::PublishResults> published = publisher->publish(10);
  ASSERT_TRUE(published.isOk()) << published.status().toString();
  EXPECT_EQ(published->answered, 2u);
  EXPECT_EQ(published->sum, 22);
  std::tie(mine, all) = impl->ranOn(me);
  EXPECT_EQ(all, 202u);
  if (GetParam() == TransferMode::kSpin) {
    EXPECT_EQ(mine, 202u);
  }

  // An asynchronous call's caller does not wait spinning: the callback thread runs its callbacks.
  auto pending = publisher->async().ping(listener, 41);
  Result<int64_t> late = pending.wait();
  ASSERT_TRUE(late.isOk()) << late.status().toString();
  EXPECT_EQ(*late, 42);
  std::tie(mine, all) = impl->ranOn(me);
  EXPECT_EQ(all, 203u);
  if (GetParam() == TransferMode::kSpin) {
    EXPECT_EQ(mine, 202u) << "the asynchronous call's callback ran here";
  }
  ASSERT_TRUE(publisher->clear().isOk());
}

// A caller that runs a slow callback of its own call still honours its deadline once the
// callback returns, and the binding serves the next call.
TEST_P(SameHost, ACallerRunningItsCallbackStillHasADeadline) {
  ASSERT_NO_FATAL_FAILURE(startPublisher());
  auto& publisher = publisher_;
  auto slow = caps::Listener::Client::serve(std::make_shared<ThreadListener>(std::chrono::milliseconds(200)));
  CallOptions quick;
  quick.timeout = std::chrono::milliseconds(30);
  Result<int64_t> r = publisher->withOptions(quick).ping(slow, 1);
  EXPECT_EQ(r.status().code(), Errc::kDeadlineExceeded) << r.status().toString();
  auto fast = caps::Listener::Client::serve(std::make_shared<ThreadListener>());
  // The late reply of the first call goes nowhere; the binding still works.
  for (int i = 0; i < 3; ++i) {
    Result<int64_t> again = publisher->ping(fast, 5);
    ASSERT_TRUE(again.isOk()) << again.status().toString();
    EXPECT_EQ(*again, 6);
  }
}

// A callback the handler starts and does not wait for is rung before its call returns, and
// the server leaves it to the waiting caller: that thread runs it, though it may find it only
// after it has seen the return, so it is never left to nobody.
TEST_P(SameHost, ACallbackStartedButNotAwaitedStillRuns) {
  ASSERT_NO_FATAL_FAILURE(startPublisher());
  auto listener = caps::Listener::Client::serve(std::make_shared<ThreadListener>());
  CallOptions bounded;
  bounded.timeout = std::chrono::seconds(10);  // a lost callback fails here, not in ctest's timeout
  for (int i = 0; i < 300; ++i) {
    ASSERT_TRUE(publisher_->notifyLater(listener, i).isOk()) << i;
    Result<int64_t> sum = publisher_->withOptions(bounded).collectLater();
    ASSERT_TRUE(sum.isOk()) << i << ": " << sum.status().toString();
    EXPECT_EQ(*sum, i + 1);
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, SameHost,
                         ::testing::ValuesIn(kTransferModes), modeTestName);

TEST_F(SameHostCaps, ManyThreadsCallCapabilities) {
  auto factory = importFactory(dir_.path());
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

TEST_F(SameHostCaps, ObjectsOfADeadClientAreReleased) {
  Pipe held;
  Child client([&] { return holdCountersUntilKilled(importFactory(dir_.path()), [&] { held.putByte('k'); }); });
  char c = 0;
  ASSERT_TRUE(held.get(&c, 1) && c == 'k');
  auto factory = importFactory(dir_.path());
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

TEST_F(SameHostCaps, ABindingHoldsAtMostTheLimit) {
  server_.reset();  // first, so that the name is free for a server with a limit of 4
  server_ = std::make_unique<FactoryProcess>(dir_.path(), 4);
  ASSERT_TRUE(server_->up());
  auto factory = importFactory(dir_.path());
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
  auto other = importFactory(dir_.path());
  ASSERT_TRUE(other.isOk());
  EXPECT_TRUE(other->make("other", 0).isOk());
}

TEST_F(SameHostCaps, CallsFailCleanlyOnceTheServerDies) {
  auto factory = importFactory(dir_.path());
  ASSERT_TRUE(factory.isOk()) << factory.status().toString();
  auto counter = factory->make("c", 1);
  ASSERT_TRUE(counter.isOk());
  server_.reset();  // kills the server process
  auto r = counter->add(1);
  EXPECT_EQ(r.status().code(), Errc::kPeerDied) << r.status().toString();
  counter = Status(Errc::kCancelled);  // the release finds the server gone: no hang, no crash
}

// A Counter client for `id` as if the server had returned it through `factory`'s binding.
caps::Counter::Client forged(const caps::Factory::Client& factory, uint32_t id) {
  auto b = detail::capFromFrame(*factory.binding(), id, caps::Counter::kDescriptor);
  EXPECT_TRUE(b.isOk()) << b.status().toString();
  return caps::Counter::Client(b.isOk() ? *b : nullptr);
}

// Ids of the server's table that it never gave out or has taken back, sent through `factory`
// (a fresh server) to the other process: kBadFrame, called on or passed back, and the live
// object whose slot some of them name is neither reached nor released (each forged client's
// release goes to the server too).
void checkForgedAndStaleIds(caps::Factory::Client& factory) {
  auto kept = factory.make("kept", 5);
  ASSERT_TRUE(kept.isOk()) << kept.status().toString();
  const uint32_t keptId = kept->binding()->channel->importedCap()->id;
  auto gone = factory.make("gone", 1);
  ASSERT_TRUE(gone.isOk()) << gone.status().toString();
  const uint32_t goneId = gone->binding()->channel->importedCap()->id;
  EXPECT_EQ(*forged(factory, goneId).add(1), 2);  // a crafted capability of a real id reaches it
  gone = Status(Errc::kCancelled);
  EXPECT_EQ(*factory.live(), 1u);
  // The kept object's slot in a later generation, slots never used, and the released id.
  for (uint32_t id : {keptId + (1u << 20), 0x7FFFFu, 0x7FFFFFFFu, goneId}) {
    SCOPED_TRACE(id);
    Result<int64_t> called = forged(factory, id).add(1);
    EXPECT_EQ(called.status().code(), Errc::kBadFrame) << called.status().toString();
    Result<int64_t> passed = factory.read(forged(factory, id));
    EXPECT_EQ(passed.status().code(), Errc::kBadFrame) << passed.status().toString();
  }
  // The released slot, reused: its new object does not answer to the old id.
  auto next = factory.make("next", 7);
  ASSERT_TRUE(next.isOk()) << next.status().toString();
  EXPECT_NE(next->binding()->channel->importedCap()->id, goneId);
  EXPECT_EQ(forged(factory, goneId).add(1).status().code(), Errc::kBadFrame);
  EXPECT_EQ(*next->add(0), 7);
  EXPECT_EQ(*kept->add(0), 5) << "a forged id reached the live object";
  EXPECT_EQ(*factory.live(), 2u) << "a forged id's release dropped a live object";
  kept = Status(Errc::kCancelled);
  next = Status(Errc::kCancelled);
  EXPECT_EQ(*factory.live(), 0u);
}

TEST_F(SameHostCaps, ForgedAndStaleIdsAreBadFrames) {
  auto factory = importFactory(dir_.path());
  ASSERT_TRUE(factory.isOk()) << factory.status().toString();
  checkForgedAndStaleIds(*factory);
}

// Exports "broker" in `dir`, whose upstream is the Factory exported there.
class BrokerProcess : public ExporterProcess {
 public:
  explicit BrokerProcess(const std::string& dir)
      : ExporterProcess(dir, [&dir](Exporter& exporter) -> std::shared_ptr<void> {
          auto upstream = importFactory(dir);
          if (!upstream.isOk()) return nullptr;
          auto impl = std::make_shared<BrokerImpl>(std::move(*upstream));
          return exporter.add<caps::Broker>("broker", *impl).isOk() ? impl : nullptr;
        }) {}
};

// Capabilities passed on through a binding other than the one they came on, across three
// processes: the broker returns the factory's counters (a proxy in the broker), and this
// process passes the factory's counters to the broker (a proxy here, called back).
TEST_P(SameHost, ProxiesPassCapabilitiesOn) {
  TempDir dir;
  FactoryProcess factoryServer(dir.path());
  ASSERT_TRUE(factoryServer.up());
  BrokerProcess brokerServer(dir.path());
  ASSERT_TRUE(brokerServer.up());
  auto factory = importFactory(dir.path(), GetParam());
  ASSERT_TRUE(factory.isOk()) << factory.status().toString();
  ImportOptions io;
  io.dir = dir.path();
  io.mode = GetParam();
  auto broker = lrpc::import<caps::Broker>("broker", io);
  ASSERT_TRUE(broker.isOk()) << broker.status().toString();

  auto relayed = broker->relay("r", 5);
  ASSERT_TRUE(relayed.isOk()) << relayed.status().toString();
  EXPECT_EQ(*relayed->add(1), 6);  // this process -> broker -> factory
  EXPECT_EQ(*relayed->label(), "r");
  EXPECT_EQ(*factory->live(), 1u);
  EXPECT_EQ(*broker->read(*relayed), 6);  // the broker gets its own proxy back

  auto made = factory->make("m", 10);
  ASSERT_TRUE(made.isOk()) << made.status().toString();
  auto read = broker->read(*made);  // broker -> this process (callback) -> factory
  ASSERT_TRUE(read.isOk()) << read.status().toString();
  EXPECT_EQ(*read, 10);
  EXPECT_EQ(*factory->live(), 2u);

  // Released along the chain: the proxies go, and with them their references upstream.
  relayed = Status(Errc::kCancelled);
  made = Status(Errc::kCancelled);
  for (int i = 0; i < 500 && *factory->live() != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(*factory->live(), 0u);

  // The upstream server dies: calls through the broker's proxy fail at once, and the broker,
  // whose own process lives on, still answers.
  auto orphan = broker->relay("o", 1);
  ASSERT_TRUE(orphan.isOk()) << orphan.status().toString();
  factoryServer.kill();
  Result<int64_t> dead = orphan->add(1);
  EXPECT_EQ(dead.status().code(), Errc::kPeerDied) << dead.status().toString();
  EXPECT_FALSE(broker->relay("late", 1).isOk());
  caps::Counter::Client unbound;
  EXPECT_EQ(broker->read(unbound).status().code(), Errc::kBindingRejected);  // the broker itself still serves
}

// Four threads call back through one binding, each with its own object and a fresh one per
// call (exported, called, released): every answer right, nothing left behind.
void checkManyThreadsCallBack(caps::Publisher::Client& publisher) {
  auto live = std::make_shared<std::atomic<uint32_t>>(0);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      auto listener = caps::Listener::Client::serve(std::make_shared<ListenerImpl>(live, t * 1000));
      for (int i = 0; i < 100; ++i) {
        auto r = publisher.ping(listener, i);
        if (!r.isOk() || *r != t * 1000 + i) ++failures;
        auto once = caps::Listener::Client::serve(std::make_shared<ListenerImpl>(live, 7));
        if (auto o = publisher.ping(once, 1); !o.isOk() || *o != 8) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(live->load(), 0u);
}

TEST_F(SameHostCallbacks, ManyThreadsCallBack) {
  auto publisher = importPublisher(dir_.path());
  ASSERT_TRUE(publisher.isOk()) << publisher.status().toString();
  checkManyThreadsCallBack(*publisher);
}

// `publisher`'s server keeps a listener (offset 500) of another client process, `client`.
// This process subscribes one of its own (offset 1, counted in `live`) and kills `client`:
// the server's call on the dead client's listener fails (kPeerDied, and it drops it), ours
// still answers.
void checkDeadClientsListenerIsDropped(caps::Publisher::Client& publisher, Child& client,
                                       const std::shared_ptr<std::atomic<uint32_t>>& live) {
  ASSERT_TRUE(publisher.subscribe(caps::Listener::Client::serve(std::make_shared<ListenerImpl>(live, 1))).isOk());
  auto both = publisher.publish(1);
  ASSERT_TRUE(both.isOk()) << both.status().toString();
  EXPECT_EQ(both->sum, 501 + 2);
  client.kill();
  client.wait();
  auto after = publisher.publish(1);
  ASSERT_TRUE(after.isOk()) << after.status().toString();
  EXPECT_EQ(after->answered, 1u);
  EXPECT_EQ(after->sum, 2);
}

TEST_F(SameHostCallbacks, ServerDropsTheCallbacksOfADeadClient) {
  Pipe held;
  Child client([&] {
    auto publisher = importPublisher(dir_.path());
    if (!publisher.isOk()) return 1;
    auto live = std::make_shared<std::atomic<uint32_t>>(0);
    if (!publisher->subscribe(caps::Listener::Client::serve(std::make_shared<ListenerImpl>(live, 500))).isOk()) return 2;
    held.putByte('k');
    for (;;) ::pause();
  });
  char c = 0;
  ASSERT_TRUE(held.get(&c, 1) && c == 'k');
  auto publisher = importPublisher(dir_.path());
  ASSERT_TRUE(publisher.isOk()) << publisher.status().toString();
  auto live = std::make_shared<std::atomic<uint32_t>>(0);
  checkDeadClientsListenerIsDropped(*publisher, client, live);
  ASSERT_TRUE(publisher->clear().isOk());
  EXPECT_EQ(live->load(), 0u);
}

TEST_F(SameHostCallbacks, ClientDropsItsObjectsWhenTheServerDies) {
  auto publisher = importPublisher(dir_.path());
  ASSERT_TRUE(publisher.isOk()) << publisher.status().toString();
  auto live = std::make_shared<std::atomic<uint32_t>>(0);
  ASSERT_TRUE(publisher->subscribe(caps::Listener::Client::serve(std::make_shared<ListenerImpl>(live, 1))).isOk());
  EXPECT_EQ(live->load(), 1u);  // only the server holds it
  server_.reset();
  EXPECT_EQ(settle(*live, 0), 0u) << "the dead server's reference kept our object alive";
  auto late = caps::Listener::Client::serve(std::make_shared<ListenerImpl>(live, 1));
  EXPECT_EQ(publisher->subscribe(late).status().code(), Errc::kPeerDied);
}

TEST_F(SameHostCallbacks, UnbindingReleasesTheObjectsAndTheServersCallsFail) {
  auto live = std::make_shared<std::atomic<uint32_t>>(0);
  auto watcher = importPublisher(dir_.path());
  ASSERT_TRUE(watcher.isOk()) << watcher.status().toString();
  {
    auto publisher = importPublisher(dir_.path());
    ASSERT_TRUE(publisher.isOk()) << publisher.status().toString();
    ASSERT_TRUE(publisher->subscribe(caps::Listener::Client::serve(std::make_shared<ListenerImpl>(live, 1))).isOk());
  }  // the binding ends: our callback host with it
  EXPECT_EQ(live->load(), 0u);
  auto after = watcher->publish(1);
  ASSERT_TRUE(after.isOk()) << after.status().toString();
  EXPECT_EQ(after->answered, 0u);
}

TEST_F(SameHostCallbacks, AForgedCallbackIdIsABadFrame) {
  auto publisher = importPublisher(dir_.path());
  ASSERT_TRUE(publisher.isOk()) << publisher.status().toString();
  // Before this client has passed any callback: the server has no callback binding to use.
  auto forged = detail::capFromFrame(*publisher->binding(), 1, caps::Listener::kDescriptor);
  ASSERT_TRUE(forged.isOk());
  // capFromFrame made a capability the server hosts with id 1; present it as client-hosted.
  const_cast<CapImport*>((*forged)->channel->importedCap())->id = kClientHostedCap | 1;
  caps::Listener::Client listener(*forged);
  EXPECT_EQ(publisher->ping(listener, 1).status().code(), Errc::kBadFrame);
  // After it has: an id its table never gave out.
  auto live = std::make_shared<std::atomic<uint32_t>>(0);
  auto real = caps::Listener::Client::serve(std::make_shared<ListenerImpl>(live, 1));
  EXPECT_EQ(*publisher->ping(real, 1), 2);
  const_cast<CapImport*>((*forged)->channel->importedCap())->id = kClientHostedCap | 0x7FFFF;
  EXPECT_EQ(publisher->ping(listener, 1).status().code(), Errc::kBadFrame);
  const_cast<CapImport*>((*forged)->channel->importedCap())->id = 1;  // so that its release is harmless
}

// A listener the server held and let go, called by its id: the client's table no longer
// names it (its slot's generation moved on), and the object that reuses the slot is not reached.
TEST_F(SameHostCallbacks, AStaleCallbackIdIsABadFrame) {
  auto publisher = importPublisher(dir_.path());
  ASSERT_TRUE(publisher.isOk()) << publisher.status().toString();
  auto live = std::make_shared<std::atomic<uint32_t>>(0);
  auto first = std::make_shared<ListenerImpl>(live, 1);
  ASSERT_TRUE(publisher->subscribe(caps::Listener::Client::serve(first)).isOk());
  auto forged = detail::capFromFrame(*publisher->binding(), 1, caps::Listener::kDescriptor);
  ASSERT_TRUE(forged.isOk());
  auto* id = &const_cast<CapImport*>((*forged)->channel->importedCap())->id;
  *id = kClientHostedCap | 1;  // the first callback this binding passed: slot 0, generation 0
  caps::Listener::Client listener(*forged);
  EXPECT_EQ(*publisher->ping(listener, 1), 2);
  EXPECT_EQ(first->calls.load(), 1u) << "the id is the subscribed listener's";
  ASSERT_TRUE(publisher->clear().isOk());
  first.reset();
  EXPECT_EQ(live->load(), 0u);
  Result<int64_t> stale = publisher->ping(listener, 1);
  EXPECT_EQ(stale.status().code(), Errc::kBadFrame) << stale.status().toString();
  auto second = std::make_shared<ListenerImpl>(live, 10);
  ASSERT_TRUE(publisher->subscribe(caps::Listener::Client::serve(second)).isOk());
  EXPECT_EQ(publisher->ping(listener, 1).status().code(), Errc::kBadFrame) << "the reused slot answered the old id";
  EXPECT_EQ(second->calls.load(), 0u);
  auto published = publisher->publish(1);
  ASSERT_TRUE(published.isOk()) << published.status().toString();
  EXPECT_EQ(published->sum, 11);
  *id = 1;  // so that its release is harmless
  ASSERT_TRUE(publisher->clear().isOk());
}

// Over UDP too, a callback that serves the call its caller waits for runs on that caller's
// thread when the caller polls (it reads its callback host's socket while it waits, instead
// of waiting for the host's thread to be scheduled on its core); a sleeping caller runs none.
// A callback that no waiting caller causes is still served, by the host's own thread, which
// stops sleeping off the socket once the caller stops reading it. `uri` names the publisher.
void checkCallbacksRunOnThePollingCaller(const std::string& uri) {
  for (net::ReceiveMode mode : {net::ReceiveMode::kBusyPoll, net::ReceiveMode::kAdaptive, net::ReceiveMode::kBlocking}) {
    SCOPED_TRACE(static_cast<int>(mode));
    net::ClientOptions options;
    options.mode = mode;
    auto publisher = net::connect<caps::Publisher>(uri, options);
    ASSERT_TRUE(publisher.isOk()) << publisher.status().toString();
    auto impl = std::make_shared<ThreadListener>();
    auto listener = caps::Listener::Client::serve(impl);
    const std::thread::id me = std::this_thread::get_id();
    ASSERT_NO_FATAL_FAILURE(pingTimes(*publisher, listener, 200));
    auto [mine, all] = impl->ranOn(me);
    EXPECT_EQ(all, 200u);
    if (mode == net::ReceiveMode::kBlocking) {
      EXPECT_EQ(mine, 0u) << "a sleeping caller runs none";
    } else {
      // The host's thread may take the first ones, before it sees the caller reading.
      EXPECT_GT(mine, 0u) << "a polling caller runs the callbacks of its call";
    }

    // Right after, a call on another session makes the server call our listener: no caller
    // of ours waits, so the host's own thread serves it.
    ASSERT_TRUE(publisher->subscribe(listener).isOk());
    auto other = net::connect<caps::Publisher>(uri);
    ASSERT_TRUE(other.isOk()) << other.status().toString();
    Result<caps::Publisher::PublishResults> published = other->publish(10);
    ASSERT_TRUE(published.isOk()) << published.status().toString();
    EXPECT_EQ(published->answered, 1u);
    EXPECT_EQ(published->sum, 11);
    std::tie(mine, all) = impl->ranOn(me);
    EXPECT_EQ(all, 201u);
    ASSERT_TRUE(publisher->clear().isOk());
  }
}

uint16_t serveFactory(const std::string& bind, const net::ServerSecurity& security) {
  net::ServerOptions o;
  o.maxCapabilities = 4;
  o.security = security;
  return net::testing::startUdpServer(bind, o, [](net::UdpServer& server) {
    // The broker's upstream: a factory in another process on this host.
    auto* dir = new TempDir;
    auto* upstreamServer = new FactoryProcess(dir->path());
    auto upstream = importFactory(dir->path());
    if (!upstreamServer->up() || !upstream.isOk()) return false;
    return server.add<caps::Vault>("vault", *new VaultImpl).isOk() &&
           server.add<caps::Factory>("factory", *new FactoryImpl).isOk() &&
           server.add<caps::Keeper>("keeper", *new KeeperImpl).isOk() &&
           server.add<caps::Publisher>("publisher", *new PublisherImpl).isOk() &&
           server.add<caps::Broker>("broker", *new BrokerImpl(std::move(*upstream))).isOk();
  });
}

TEST(TwoNamespaces, CapabilitiesRoundTrip) {
  NetnsPair pair;
  ASSERT_TRUE(pair.create().isOk()) << "network namespaces are needed for this test";
  net::ServerSecurity clear;
  clear.clearText = true;
  ForkedServer server(pair.nsPath(true), pair.ipA() + ":0", [&](const std::string& b) { return serveFactory(b, clear); });
  ASSERT_NE(server.port(), 0) << "server did not start";
  const std::string uri = "udp+clear://" + pair.ipA() + ":" + std::to_string(server.port()) + "/factory";
  runIn(pair.nsPath(false), [&] {
    auto factory = net::connect<caps::Factory>(uri);
    ASSERT_TRUE(factory.isOk()) << factory.status().toString();
    checkCapabilities(*factory);
    checkAsyncCapabilities(*factory);
    checkSecondBase(*factory);
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
    auto vault = net::connect<caps::Vault>(uri.substr(0, uri.rfind('/')) + "/vault");
    auto other = net::connect<caps::Vault>(uri.substr(0, uri.rfind('/')) + "/vault");
    ASSERT_TRUE(vault.isOk() && other.isOk()) << vault.status().toString() << other.status().toString();
    checkUntypedCapabilities(*vault, *other, *factory);
    // Callbacks: the server calls this process back over a session of its own.
    auto publisher = net::connect<caps::Publisher>(uri.substr(0, uri.rfind('/')) + "/publisher");
    ASSERT_TRUE(publisher.isOk()) << publisher.status().toString();
    checkCallbacks(*publisher);
    checkClientObjectsInsideValues(*publisher);
    checkReleasesBeforeEveryReturn(*publisher);
    checkReleaseOfAGivenUpCall(*publisher);
    checkCallbacksRunOnThePollingCaller(uri.substr(0, uri.rfind('/')) + "/publisher");
    // The server passes on a capability of another server (its same-host upstream): a proxy.
    auto broker = net::connect<caps::Broker>(uri.substr(0, uri.rfind('/')) + "/broker");
    ASSERT_TRUE(broker.isOk()) << broker.status().toString();
    auto relayed = broker->relay("r", 5);
    ASSERT_TRUE(relayed.isOk()) << relayed.status().toString();
    EXPECT_EQ(*relayed->add(1), 6);
    EXPECT_EQ(*broker->read(*relayed), 6);
    // This client passes on a capability of its other session: it serves a proxy, which the
    // broker calls back (broker -> this process -> factory).
    auto made = factory->make("m", 1);
    ASSERT_TRUE(made.isOk()) << made.status().toString();
    auto passed = broker->read(*made);
    ASSERT_TRUE(passed.isOk()) << passed.status().toString();
    EXPECT_EQ(*passed, 1);
    made = Status(Errc::kCancelled);
    relayed = Status(Errc::kCancelled);
    for (int i = 0; i < 500 && *factory->live() != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ(*factory->live(), 0u);
  });
}

// Callbacks over UDP when something goes wrong: a client that dies with its object held by the
// server, forged and stale ids, bad requests for a channel back, and a server that dies.
TEST(TwoNamespaces, CallbacksFailCleanly) {
  NetnsPair pair;
  ASSERT_TRUE(pair.create().isOk()) << "network namespaces are needed for this test";
  net::ServerSecurity clear;
  clear.clearText = true;
  auto server = std::make_unique<ForkedServer>(pair.nsPath(true), pair.ipA() + ":0",
                                               [&](const std::string& b) { return serveFactory(b, clear); });
  ASSERT_NE(server->port(), 0) << "server did not start";
  const std::string uri = "udp+clear://" + pair.ipA() + ":" + std::to_string(server->port()) + "/publisher";
  // A client process passes a listener that the server keeps, then dies. Forked before any
  // thread of this test starts (ThreadSanitizer does not follow a multi-threaded fork).
  Pipe held;
  Child client([&] {
    if (!enterNetns(pair.nsPath(false))) return 3;
    auto publisher = net::connect<caps::Publisher>(uri);
    if (!publisher.isOk()) return 1;
    auto live = std::make_shared<std::atomic<uint32_t>>(0);
    if (!publisher->subscribe(caps::Listener::Client::serve(std::make_shared<ListenerImpl>(live, 500))).isOk()) {
      return 2;
    }
    held.putByte('k');
    for (;;) ::pause();
  });
  char c = 0;
  ASSERT_TRUE(held.get(&c, 1) && c == 'k');
  runIn(pair.nsPath(false), [&] {
    auto publisher = net::connect<caps::Publisher>(uri);
    ASSERT_TRUE(publisher.isOk()) << publisher.status().toString();
    auto live = std::make_shared<std::atomic<uint32_t>>(0);
    checkDeadClientsListenerIsDropped(*publisher, client, live);

    // Ids our table never gave out, and one it gave out and took back: kBadFrame.
    auto forged = detail::capFromFrame(*publisher->binding(), 1, caps::Listener::kDescriptor);
    ASSERT_TRUE(forged.isOk());
    auto* id = &const_cast<CapImport*>((*forged)->channel->importedCap())->id;
    *id = kClientHostedCap | 0x7FFFF;
    caps::Listener::Client listener(*forged);
    EXPECT_EQ(publisher->ping(listener, 1).status().code(), Errc::kBadFrame);
    *id = kClientHostedCap | 1;  // the slot of the listener subscribed above, generation 0
    EXPECT_EQ(*publisher->ping(listener, 1), 2);
    ASSERT_TRUE(publisher->clear().isOk());
    EXPECT_EQ(live->load(), 0u);
    EXPECT_EQ(publisher->ping(listener, 1).status().code(), Errc::kBadFrame) << "a released id stays dead";
    *id = 1;  // so that its release is harmless

    // Asking for a channel back: a malformed port, and another port once one is attached.
    const std::byte shortPort[1] = {std::byte{1}};
    EXPECT_EQ(detail::attachCallbacks(*publisher->binding(), shortPort, {}).code(), Errc::kBadFrame);
    const std::byte otherPort[2] = {std::byte{1}, std::byte{0}};
    EXPECT_EQ(detail::attachCallbacks(*publisher->binding(), otherPort, {}).code(), Errc::kAlreadyExists);
    // A fresh session naming a port where nothing listens: an error, within the server's bound.
    auto fresh = net::connect<caps::Publisher>(uri);
    ASSERT_TRUE(fresh.isOk()) << fresh.status().toString();
    const auto start = std::chrono::steady_clock::now();
    Status nobody = detail::attachCallbacks(*fresh->binding(), otherPort, {});
    EXPECT_FALSE(nobody.isOk());
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3)) << nobody.toString();

    // The server dies: the objects we passed it are released once a call finds it gone.
    auto kept = std::make_shared<ListenerImpl>(live, 1);
    ASSERT_TRUE(publisher->subscribe(caps::Listener::Client::serve(kept)).isOk());
    kept.reset();
    EXPECT_EQ(live->load(), 1u);
    server.reset();
    EXPECT_EQ(publisher->publish(1).status().code(), Errc::kPeerDied);
    EXPECT_EQ(live->load(), 0u) << "the dead server's reference kept our object alive";
  });
}

TEST(TwoNamespaces, ForgedAndStaleIdsAreBadFrames) {
  NetnsPair pair;
  ASSERT_TRUE(pair.create().isOk()) << "network namespaces are needed for this test";
  net::ServerSecurity clear;
  clear.clearText = true;
  ForkedServer server(pair.nsPath(true), pair.ipA() + ":0", [&](const std::string& b) { return serveFactory(b, clear); });
  ASSERT_NE(server.port(), 0) << "server did not start";
  runIn(pair.nsPath(false), [&] {
    auto factory = net::connect<caps::Factory>("udp+clear://" + pair.ipA() + ":" + std::to_string(server.port()) + "/factory");
    ASSERT_TRUE(factory.isOk()) << factory.status().toString();
    checkForgedAndStaleIds(*factory);
  });
}

// A server that restarts has lost the session, and with it the capabilities it gave there,
// while the new session's table gives out the same ids again: a capability of the old session
// fails, saying so, and neither reaches nor releases the new session's object of its id.
TEST(TwoNamespaces, CapabilitiesOfALostSessionFailClearly) {
  NetnsPair pair;
  ASSERT_TRUE(pair.create().isOk()) << "network namespaces are needed for this test";
  net::ServerSecurity clear;
  clear.clearText = true;
  auto first = std::make_unique<ForkedServer>(pair.nsPath(true), pair.ipA() + ":0",
                                              [&](const std::string& b) { return serveFactory(b, clear); });
  const uint16_t port = first->port();
  ASSERT_NE(port, 0) << "server did not start";
  const std::string hostPort = pair.ipA() + ":" + std::to_string(port);
  runIn(pair.nsPath(false), [&] {
    auto factory = net::connect<caps::Factory>("udp+clear://" + hostPort + "/factory");
    ASSERT_TRUE(factory.isOk()) << factory.status().toString();
    auto old = factory->make("old", 10);
    ASSERT_TRUE(old.isOk()) << old.status().toString();
    const uint32_t oldId = old->binding()->channel->importedCap()->id;
    first.reset();
    // The restarted server runs in this process: holding `old`, the channel has a keepalive
    // thread, and a process with threads must not fork (ThreadSanitizer refuses it).
    FactoryImpl secondImpl;
    net::ServerOptions so;
    so.security = clear;
    net::UdpServer second(so);
    ASSERT_TRUE(second.add<caps::Factory>("factory", secondImpl).isOk());
    Result<uint16_t> bound = Status(Errc::kNotFound, "not bound");
    runIn(pair.nsPath(true), [&] { bound = second.bind(hostPort); });
    ASSERT_TRUE(bound.isOk()) << bound.status().toString();
    ASSERT_EQ(*bound, port);
    ASSERT_TRUE(second.start().isOk());
    // The call that meets the new server went out on the old session: it fails, and the
    // channel opens a new session for the next one.
    EXPECT_EQ(factory->live().status().code(), Errc::kPeerDied);
    auto fresh = factory->make("fresh", 100);
    ASSERT_TRUE(fresh.isOk()) << fresh.status().toString();
    EXPECT_EQ(fresh->binding()->channel->importedCap()->id, oldId) << "the new table gives out the old id again";
    Result<int64_t> called = old->add(1);
    EXPECT_EQ(called.status().code(), Errc::kPeerDied) << called.status().toString();
    EXPECT_NE(called.status().detail().find("session that gave this capability ended"), std::string::npos)
        << called.status().toString();
    Result<int64_t> passed = factory->read(*old);
    EXPECT_EQ(passed.status().code(), Errc::kPeerDied) << passed.status().toString();
    EXPECT_EQ(*fresh->add(0), 100) << "the old capability reached the new session's object";
    old = Status(Errc::kCancelled);
    EXPECT_EQ(*factory->live(), 1u) << "the old capability's release dropped the new session's object";
    EXPECT_EQ(*fresh->add(1), 101);
    EXPECT_EQ(dynamic_cast<net::UdpChannel*>(factory->binding()->channel)->stats().sessions, 2u);
    fresh = Status(Errc::kCancelled);
    factory = Status(Errc::kCancelled);  // before the server it calls goes
  });
}

// The same over authenticated, encrypted sessions: the channel back to this process is a
// session of its own, where each side accepts only the key the other proved.
TEST(TwoNamespaces, CallbacksOverSecureSessions) {
  NetnsPair pair;
  ASSERT_TRUE(pair.create().isOk()) << "network namespaces are needed for this test";
  auto key = secure::KeyPair::generate();
  ASSERT_TRUE(key.isOk()) << key.status().toString();
  net::ServerSecurity security;
  security.keyPair = *key;
  security.anyClient = true;
  ForkedServer server(pair.nsPath(true), pair.ipA() + ":0", [&](const std::string& b) { return serveFactory(b, security); });
  ASSERT_NE(server.port(), 0) << "server did not start";
  const std::string base = "udp://" + pair.ipA() + ":" + std::to_string(server.port()) + "/";
  const std::string query = "?key=" + key->publicKey().toText();
  runIn(pair.nsPath(false), [&] {
    auto publisher = net::connect<caps::Publisher>(base + "publisher" + query);
    ASSERT_TRUE(publisher.isOk()) << publisher.status().toString();
    checkCallbacks(*publisher);
    checkReleasesBeforeEveryReturn(*publisher);
    checkManyThreadsCallBack(*publisher);
    checkCallbacksRunOnThePollingCaller(base + "publisher" + query);
    auto factory = net::connect<caps::Factory>(base + "factory" + query);
    ASSERT_TRUE(factory.isOk()) << factory.status().toString();
    checkSecondBase(*factory);
  });
  // A channel made in the client's namespace and used from a thread outside it: the callback
  // host's socket still goes where the channel's is.
  Result<caps::Publisher::Client> publisher = Status(Errc::kNotFound, "not connected");
  runIn(pair.nsPath(false), [&] { publisher = net::connect<caps::Publisher>(base + "publisher" + query); });
  ASSERT_TRUE(publisher.isOk()) << publisher.status().toString();
  checkCallbacks(*publisher);
}

}  // namespace
}  // namespace lrpc::testing
