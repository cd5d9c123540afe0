// Many client threads calling through one binding at once, and A-stack exhaustion. Labelled
// "concurrency": run under ThreadSanitizer too (the server is another process, so TSan checks
// the client side: the lock-free A-stack pool, the socket serialization, the abandoned list).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/exporter.h"
#include "runtime/import.h"
#include "tests/integration/per_mode.h"
#include "tests/integration/servers.h"

namespace lrpc::testing {
namespace {

class ConcurrencyTest : public PerModeTest {
 protected:
  ImportOptions opts() const {
    ImportOptions o = PerModeTest::opts();
    o.astackWait = std::chrono::seconds(30);
    return o;
  }
};

TEST_P(ConcurrencyTest, ManyThreadsShareOneBinding) {
  TestServer server(dir_.path(), "svc");
  ASSERT_TRUE(server.ok());
  Result<TestService::Client> c = lrpc::import<TestService>("svc", opts());
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  constexpr int kThreads = 8;  // more than the 5 A-stacks per procedure: some callers wait
  constexpr int kCalls = 300;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      TestService::Client mine = *c;
      for (int i = 0; i < kCalls; ++i) {
        Result<int32_t> r = mine.add(t, i);
        if (!r.isOk() || *r != t + i) failures.fetch_add(1);
        if (i % 50 == 0) {
          std::vector<uint8_t> in(i % 100 == 0 ? 3000 : 10, static_cast<uint8_t>(t));
          Result<std::vector<uint8_t>> e = mine.echo(in);
          if (!e.isOk() || *e != in) failures.fetch_add(1);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST_P(ConcurrencyTest, ExhaustedAStacksGiveResourceExhausted) {
  TestServer server(dir_.path(), "svc");
  ASSERT_TRUE(server.ok());
  ImportOptions o = opts();
  o.astackWait = std::chrono::milliseconds(20);
  Result<TestService::Client> c = lrpc::import<TestService>("svc", o);
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  std::atomic<bool> holding{false};
  std::thread holder([&] {
    // sleepMs has a single A-stack; hold it for a while. (The loop only makes sure the other
    // thread's attempt overlaps; it asserts nothing about time.)
    holding.store(true);
    TestService::Client mine = *c;
    // The other thread may hold the A-stack for a moment: retry until we have had our turn.
    Status held(Errc::kResourceExhausted);
    for (int i = 0; i < 1000 && held.code() == Errc::kResourceExhausted; ++i) held = mine.sleepMs(500).status();
    EXPECT_TRUE(held.isOk()) << held.toString();
  });
  while (!holding.load()) std::this_thread::yield();
  // Until the holder has the A-stack; the pause leaves it room to take it on a loaded machine.
  Status seen;
  for (int i = 0; i < 5000 && seen.code() != Errc::kResourceExhausted; ++i) {
    Result<uint32_t> r = c->sleepMs(0);
    seen = r.status();
    if (seen.code() != Errc::kResourceExhausted) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(seen.code(), Errc::kResourceExhausted);
  holder.join();
  EXPECT_TRUE(c->sleepMs(0).isOk());
}

// Arguments of at least LocalCall::kStreamBytes are streamed: the server copies chunks out while
// the client still writes later ones. Several threads at once, sizes around the threshold and
// chunk boundaries, every byte checked.
TEST_P(ConcurrencyTest, StreamedArgumentsArriveWhole) {
  TestServer server(dir_.path(), "svc");
  ASSERT_TRUE(server.ok());
  Result<TestService::Client> c = lrpc::import<TestService>("svc", opts());
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  const size_t sizes[] = {LocalCall::kStreamBytes - 1, LocalCall::kStreamBytes,
                          LocalCall::kStreamBytes + LocalCall::kStreamChunk + 7, 3 * 1024 * 1024 + 5};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      TestService::Client mine = *c;
      for (int round = 0; round < 3; ++round) {
        for (size_t n : sizes) {
          std::vector<uint8_t> in(n);
          for (size_t i = 0; i < n; ++i) in[i] = static_cast<uint8_t>(i * 131 + static_cast<size_t>(t) * 7 + round);
          Result<std::vector<uint8_t>> e = mine.echo(in);
          if (!e.isOk() || *e != in) failures.fetch_add(1);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

// A rendezvous: sleepMs(ms) waits, up to ms, for a null() that comes after it began, and
// returns 1 if one came (0 if not); null() opens every sleepMs waiting.
class GateServer final : public TestService::Server {
 public:
  Status null() override {
    {
      std::lock_guard lock(mu_);
      ++opened_;
    }
    cv_.notify_all();
    return {};
  }
  Result<uint32_t> sleepMs(uint32_t ms) override {
    std::unique_lock lock(mu_);
    const uint64_t at = opened_;
    return cv_.wait_for(lock, std::chrono::milliseconds(ms), [&] { return opened_ != at; }) ? 1u : 0u;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t opened_ = 0;
};

// One client call waits in its handler for another call of the same client. Whichever server
// thread runs the waiting call (its A-stack's own, or a spinning one of another A-stack that
// helps with it), the second call is served: a thread that helps hands its own A-stack over
// first. Each round begins with null()'s thread spinning and sleepMs's asleep, where helping
// happens.
TEST_P(ConcurrencyTest, ACallWaitingForAnotherCallOfItsClientCompletes) {
  Pipe ready;
  Child server([&] {
    GateServer impl;
    ServerOptions o;
    o.dir = dir_.path();
    Exporter exporter(o);
    Status s = exporter.add("gate", TestService::kDescriptor, static_cast<TestService::Server*>(&impl));
    ready.putByte(s.isOk() ? 'k' : 'x');
    if (!s.isOk()) return 1;
    for (;;) ::pause();
  });
  char c = 0;
  ASSERT_TRUE(ready.get(&c, 1) && c == 'k');
  Result<TestService::Client> gate = lrpc::import<TestService>("gate", opts());
  ASSERT_TRUE(gate.isOk()) << gate.status().toString();
  CallOptions bounded;
  bounded.timeout = std::chrono::seconds(2);  // a deadlock shows as kDeadlineExceeded, not a hang
  TestService::Client opener = gate->withOptions(bounded);
  int stuck = 0;
  for (int round = 0; round < 40 && stuck == 0; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(3));  // every server thread goes to sleep
    ASSERT_TRUE(opener.null().isOk());  // null()'s thread wakes, serves, and spins a while
    std::atomic<bool> done{false};
    Result<uint32_t> waited = 0u;
    std::thread waiter([&] {
      TestService::Client mine = *gate;
      waited = mine.sleepMs(5000);
      done.store(true);
    });
    // Open until the waiter has seen it (a null() before its handler began does not count).
    while (!done.load()) {
      Status opened = opener.null();
      if (!opened.isOk()) {
        ADD_FAILURE() << "round " << round << ": the opening call failed while another waited for it: "
                      << opened.toString();
        ++stuck;
        break;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    waiter.join();
    ASSERT_TRUE(waited.isOk()) << waited.status().toString();
    EXPECT_EQ(*waited, 1u) << "round " << round;
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, ConcurrencyTest,
                         ::testing::ValuesIn(kTransferModes), modeTestName);

}  // namespace
}  // namespace lrpc::testing
