// The uncommon cases across real processes: servers that die before, during and after a call,
// clients that die mid-call (the server reclaims everything), handlers that throw, deadlines,
// A-stack exhaustion, name conflicts and reclaimed names, interface mismatches.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "runtime/import.h"
#include "tests/integration/per_mode.h"
#include "tests/integration/servers.h"

namespace lrpc::testing {
namespace {

using std::chrono::milliseconds;

using ModeTest = PerModeTest;

TEST_P(ModeTest, ServerKilledBeforeFirstCall) {
  TestServer server(dir_.path(), "svc");
  ASSERT_TRUE(server.ok());
  Result<TestService::Client> c = lrpc::import<TestService>("svc", opts());
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  server.kill();
  EXPECT_EQ(c->null().code(), Errc::kPeerDied);
  EXPECT_EQ(c->add(1, 2).status().code(), Errc::kPeerDied);
}

TEST_P(ModeTest, ServerKilledAfterACallThenReimport) {
  {
    TestServer server(dir_.path(), "svc");
    ASSERT_TRUE(server.ok());
    Result<TestService::Client> c = lrpc::import<TestService>("svc", opts());
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    ASSERT_TRUE(c->null().isOk());
    server.kill();
    EXPECT_EQ(c->null().code(), Errc::kPeerDied);
    // Later calls fail fast, on every procedure.
    for (int i = 0; i < 100; ++i) EXPECT_EQ(c->add(1, 2).status().code(), Errc::kPeerDied);
    EXPECT_EQ(lrpc::import<TestService>("svc", opts()).status().code(), Errc::kNotFound);
  }
  // A new server takes over the dead one's name; a new import works.
  TestServer again(dir_.path(), "svc");
  ASSERT_TRUE(again.ok());
  Result<TestService::Client> c = lrpc::import<TestService>("svc", opts());
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(*c->add(20, 22), 42);
}

TEST_P(ModeTest, ServerKilledDuringCall) {
  TestServer server(dir_.path(), "svc");
  ASSERT_TRUE(server.ok());
  Result<TestService::Client> c = lrpc::import<TestService>("svc", opts());
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  ASSERT_TRUE(c->null().isOk());
  pid_t victim = server.pid();
  Child killer([victim] {
    ::usleep(100'000);
    ::kill(victim, SIGKILL);
    return 0;
  });
  Result<uint32_t> r = c->sleepMs(60'000);  // the handler is asleep when the server dies
  EXPECT_EQ(r.status().code(), Errc::kPeerDied) << r.status().toString();
  EXPECT_EQ(c->null().code(), Errc::kPeerDied);
  killer.wait();
}

TEST_P(ModeTest, DeadlinePassesAndLateReplyDoesNotCorruptNextCall) {
  TestServer server(dir_.path(), "svc");
  ASSERT_TRUE(server.ok());
  ImportOptions o = opts();
  o.astackWait = std::chrono::seconds(30);  // the next call waits for the late one, however slow the machine
  Result<TestService::Client> c = lrpc::import<TestService>("svc", o);
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  CallOptions quick;
  quick.timeout = milliseconds(30);
  TestService::Client hurried = c->withOptions(quick);
  Result<uint32_t> late = hurried.sleepMs(300);
  EXPECT_EQ(late.status().code(), Errc::kDeadlineExceeded);
  // sleepMs has one A-stack: this call must wait until the server is done with the late call,
  // then get its own answer, not the late one's.
  Result<uint32_t> next = c->sleepMs(7);
  ASSERT_TRUE(next.isOk()) << next.status().toString();
  EXPECT_EQ(*next, 7u);
  EXPECT_TRUE(c->null().isOk());
}

TEST_P(ModeTest, HandlerThrows) {
  TestServer server(dir_.path(), "svc");
  ASSERT_TRUE(server.ok());
  Result<TestService::Client> c = lrpc::import<TestService>("svc", opts());
  ASSERT_TRUE(c.isOk());
  for (int i = 0; i < 10; ++i) {
    Status s = c->fail();
    EXPECT_EQ(s.code(), Errc::kServerFault);
    EXPECT_NE(s.detail().find("fail threw: the handler gave up"), std::string::npos) << s.toString();
  }
  EXPECT_EQ(*c->add(2, 3), 5);
}

INSTANTIATE_TEST_SUITE_P(Modes, ModeTest,
                         ::testing::ValuesIn(kTransferModes), modeTestName);

class FailureTest : public ::testing::Test {
 protected:
  TempDir dir_;
  ImportOptions opts() const {
    ImportOptions o;
    o.dir = dir_.path();
    return o;
  }
};

TEST_F(FailureTest, ClientKilledMidCallIsReclaimed) {
  ObservedServer server(dir_.path(), "svc");
  ASSERT_TRUE(server.ok());
  std::string dir = dir_.path();
  auto cycle = [&](TransferMode mode) {
    Pipe started;
    Child client([&] {
      ImportOptions o;
      o.dir = dir;
      o.mode = mode;
      Result<TestService::Client> c = lrpc::import<TestService>("svc", o);
      if (!c.isOk()) return 1;
      if (!c->null().isOk()) return 2;
      if (!c->echo(std::vector<uint8_t>(5000, 7)).isOk()) return 3;  // an out-of-band segment too
      started.putByte();
      (void)c->sleepMs(50);
      for (;;) ::pause();
    });
    ASSERT_TRUE(started.getByte());
    ::usleep(1000);
    client.kill();
    client.wait();
  };
  auto settled = [&](ServerSnapshot* snap) {
    for (int i = 0; i < 2000; ++i) {
      if (!server.snapshot(snap)) return false;
      if (snap->bindingsLive == 0 && snap->serverThreads == 0) return true;
      ::usleep(5000);
    }
    return false;
  };
  cycle(TransferMode::kAdaptive);  // warm up: the first binding allocates lasting things (malloc arenas)
  ServerSnapshot before{};
  ASSERT_TRUE(settled(&before));
  // The warm-up's clerk may still be exiting: take the baseline once fds and threads hold still.
  for (int still = 0, i = 0; still < 20 && i < 2000; ++i) {
    ServerSnapshot now{};
    ::usleep(5000);
    ASSERT_TRUE(server.snapshot(&now));
    still = now.fds == before.fds && now.threads == before.threads ? still + 1 : 0;
    before = now;
  }
  for (int i = 0; i < 100; ++i) cycle(kTransferModes[i % kTransferModeCount]);
  ServerSnapshot after{};
  ASSERT_TRUE(settled(&after)) << "bindings " << after.bindingsLive << " threads " << after.serverThreads;
  // A binding's counters drop when its clerk gives up on it; the acceptor joins that clerk and
  // frees its socket and region a moment later. Give that a bounded time before comparing.
  for (int i = 0; i < 2000 && (after.fds != before.fds || after.threads != before.threads); ++i) {
    ::usleep(5000);
    ASSERT_TRUE(server.snapshot(&after));
  }
  EXPECT_EQ(after.fds, before.fds);
  EXPECT_EQ(after.threads, before.threads);
  EXPECT_LT(after.rssKb, before.rssKb + 16 * 1024) << before.rssKb << " -> " << after.rssKb;
  EXPECT_GE(after.callsServed, before.callsServed + 200);
  // And it still serves.
  Result<TestService::Client> c = lrpc::import<TestService>("svc", opts());
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_EQ(*c->add(1, 1), 2);
}

TEST_F(FailureTest, SecondExporterGetsAlreadyExists) {
  TestServer first(dir_.path(), "svc");
  ASSERT_TRUE(first.ok());
  TestServer second(dir_.path(), "svc");
  EXPECT_FALSE(second.ok());
  EXPECT_EQ(second.result(), '0' + static_cast<int>(Errc::kAlreadyExists));
  // The first one is undisturbed.
  Result<TestService::Client> c = lrpc::import<TestService>("svc", opts());
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_TRUE(c->null().isOk());
}

TEST_F(FailureTest, DeadServersNameIsReclaimed) {
  TestServer first(dir_.path(), "svc");
  ASSERT_TRUE(first.ok());
  first.kill();
  EXPECT_TRUE(std::filesystem::exists(dir_.path() + "/svc.sock"));  // left behind
  TestServer second(dir_.path(), "svc");
  ASSERT_TRUE(second.ok());
  Result<TestService::Client> c = lrpc::import<TestService>("svc", opts());
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_TRUE(c->null().isOk());
}

TEST_F(FailureTest, InterfaceMismatchNamesBoth) {
  TestServer server(dir_.path(), "svc");
  ASSERT_TRUE(server.ok());
  Result<std::shared_ptr<Binding>> b = importBinding("svc", OtherService::kDescriptor, opts());
  ASSERT_FALSE(b.isOk());
  EXPECT_EQ(b.status().code(), Errc::kBindingRejected);
  EXPECT_NE(b.status().detail().find("OtherService"), std::string::npos) << b.status().toString();
  EXPECT_NE(b.status().detail().find("TestService"), std::string::npos) << b.status().toString();
}

TEST_F(FailureTest, UnknownNameIsNotFound) {
  EXPECT_EQ(lrpc::import<TestService>("nobody", opts()).status().code(), Errc::kNotFound);
  EXPECT_EQ(lrpc::import<TestService>("bad/name", opts()).status().code(), Errc::kInvalidArgument);
}

TEST_F(FailureTest, UnboundClientIsRejected) {
  TestService::Client c(std::make_shared<Binding>(TestService::kDescriptor, static_cast<LocalBinding*>(nullptr),
                                                  nullptr));
  EXPECT_EQ(c.null().code(), Errc::kBindingRejected);
}

}  // namespace
}  // namespace lrpc::testing
