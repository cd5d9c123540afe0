// Many client threads calling through one binding at once, A-stack exhaustion, and the
// per-thread A-stack cache. Labelled "concurrency": run under ThreadSanitizer too (the server is
// another process, so TSan checks the client side: the lock-free A-stack pool and cache, the
// socket serialization, the abandoned list).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/exporter.h"
#include "runtime/import.h"
#include "tests/integration/exporter_process.h"
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
  ExporterProcess server(dir_.path(), exportOne<TestService, GateServer>("gate"));
  ASSERT_TRUE(server.up());
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

// add(a, b) with a < 0 holds its A-stack for b ms first: a way to have every A-stack of add
// in a call at once.
class HoldingAddServer final : public TestService::Server {
 public:
  Result<int32_t> add(int32_t a, int32_t b) override {
    if (a < 0) std::this_thread::sleep_for(std::chrono::milliseconds(b));
    return a + b;
  }
};

// The per-thread A-stack cache (runtime/astack_cache.h) keeps A-stacks out of the pool between
// a thread's calls. These tests need every A-stack of add at once, with a short astackWait: an
// A-stack a cache failed to give back shows as kResourceExhausted.
class AStackCacheCallTest : public ConcurrencyTest {
 protected:
  static constexpr int kAddAStacks = 5;  // test_service.h
  void SetUp() override {
    ConcurrencyTest::SetUp();
    server_ = std::make_unique<ExporterProcess>(dir_.path(), exportOne<TestService, HoldingAddServer>("hold"));
    ASSERT_TRUE(server_->up());
  }
  Result<TestService::Client> bind() const {
    ImportOptions o = opts();
    o.astackWait = std::chrono::milliseconds(20);
    return lrpc::import<TestService>("hold", o);
  }
  // kAddAStacks calls at once, each holding its A-stack for a while: every one must get one.
  // `first` runs once the holders' threads exist and before they call: threads it starts
  // and ends cannot hand their thread control blocks, and with them their lanes, to a holder.
  static void everyAStackAtOnce(const TestService::Client& client, const std::function<void()>& first = {}) {
    std::atomic<int> failures{0};
    std::atomic<bool> go{!first};
    std::vector<std::thread> holders;
    for (int t = 0; t < kAddAStacks; ++t) {
      holders.emplace_back([&] {
        while (!go.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        TestService::Client mine = client;
        Result<int32_t> r = mine.add(-1, 200);
        if (!r.isOk() || *r != 199) {
          ADD_FAILURE() << (r.isOk() ? "wrong sum" : r.status().toString());
          failures.fetch_add(1);
        }
      });
    }
    if (first) {
      first();
      go.store(true);
    }
    for (auto& th : holders) th.join();
    EXPECT_EQ(failures.load(), 0);
  }
  std::unique_ptr<ExporterProcess> server_;
};

TEST_P(AStackCacheCallTest, ThreadsThatHaveGoneLeaveNoAStackBehind) {
  Result<TestService::Client> c = bind();
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  // Rounds of threads that call for a while together (so that some keep A-stacks cached in
  // lanes) and then exit, while the holders wait. No more threads than A-stacks: none has to
  // wait for one, which the short astackWait would turn into a failure on a loaded machine.
  for (int round = 0; round < 4; ++round) {
    std::atomic<int> failures{0};
    everyAStackAtOnce(*c, [&] {
      std::vector<std::thread> threads;
      for (int t = 0; t < kAddAStacks; ++t) {
        threads.emplace_back([&, t] {
          TestService::Client mine = *c;
          for (int i = 0; i < 200; ++i) {
            Result<int32_t> r = mine.add(t, i);
            if (!r.isOk() || *r != t + i) failures.fetch_add(1);
          }
        });
      }
      for (auto& th : threads) th.join();
    });
    ASSERT_EQ(failures.load(), 0);
  }
}

TEST_P(AStackCacheCallTest, IdleThreadsLendTheirCachedAStacks) {
  Result<TestService::Client> c = bind();
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  std::atomic<int> called{0};
  std::atomic<bool> goOn{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> idle;
  for (int t = 0; t < 3; ++t) {
    idle.emplace_back([&, t] {
      TestService::Client mine = *c;
      for (int i = 0; i < 50; ++i) {
        if (Result<int32_t> r = mine.add(t, i); !r.isOk() || *r != t + i) failures.fetch_add(1);
      }
      called.fetch_add(1);
      while (!goOn.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      // Its lane may have been revoked meanwhile: the call takes another A-stack.
      for (int i = 0; i < 50; ++i) {
        if (Result<int32_t> r = mine.add(t, i); !r.isOk() || *r != t + i) failures.fetch_add(1);
      }
    });
  }
  while (called.load() != 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  everyAStackAtOnce(*c);  // while the three threads above are alive and idle
  goOn.store(true);
  for (auto& th : idle) th.join();
  EXPECT_EQ(failures.load(), 0);
  everyAStackAtOnce(*c);
}

// A process forked while its thread keeps an A-stack cached: the child (whose copy of the
// cache names the same thread) binds for itself and calls while the parent calls on.
TEST_P(AStackCacheCallTest, AForkedChildAndItsParentCallSideBySide) {
  Result<TestService::Client> c = bind();
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(c->add(1, i).isOk());  // this thread's lane is set
  Child child([&] {
    Result<TestService::Client> own = bind();
    if (!own.isOk()) return 2;
    for (int i = 0; i < 300; ++i) {
      if (Result<int32_t> r = own->add(100, i); !r.isOk() || *r != 100 + i) return 3;
    }
    return 0;
  });
  for (int i = 0; i < 300; ++i) {
    Result<int32_t> r = c->add(7, i);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    ASSERT_EQ(*r, 7 + i);
  }
  EXPECT_EQ(child.wait(), 0);
  everyAStackAtOnce(*c);
}

INSTANTIATE_TEST_SUITE_P(Modes, AStackCacheCallTest, ::testing::ValuesIn(kTransferModes), modeTestName);

INSTANTIATE_TEST_SUITE_P(Modes, ConcurrencyTest,
                         ::testing::ValuesIn(kTransferModes), modeTestName);

}  // namespace
}  // namespace lrpc::testing
