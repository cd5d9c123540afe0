// The lock-free A-stack pool and the doorbells, between threads of one process (the same
// code runs between processes). Labelled "concurrency": run under ThreadSanitizer.
#include "runtime/transfer.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "runtime/base/fd.h"
#include "runtime/local_binding.h"
#include "tests/integration/per_mode.h"

namespace lrpc {
namespace {

using testing::kTransferModes;
using testing::modeTestName;

TEST(AStackPoolTest, LifoAndEmpty) {
  detail::AStackPool pool;
  pool.init(10, 3);
  uint32_t a = pool.pop(), b = pool.pop(), c = pool.pop();
  EXPECT_EQ(a, 10u);  // the first A-stack first: a lone caller keeps reusing a warm one
  EXPECT_EQ(std::set<uint32_t>({a, b, c}), (std::set<uint32_t>{10, 11, 12}));
  EXPECT_EQ(pool.pop(), detail::AStackPool::kEmpty);
  pool.push(b);
  EXPECT_EQ(pool.pop(), b);  // LIFO
  pool.push(a);
  pool.push(c);
  EXPECT_EQ(pool.pop(), c);
}

// Past the A-stack returned last, the rest come back newest first too.
TEST(AStackPoolTest, LifoBeyondTheTop) {
  detail::AStackPool pool;
  pool.init(10, 4);
  for (uint32_t want = 10; want < 14; ++want) EXPECT_EQ(pool.pop(), want);
  EXPECT_EQ(pool.pop(), detail::AStackPool::kEmpty);
  for (uint32_t i : {12u, 10u, 13u, 11u}) pool.push(i);
  for (uint32_t want : {11u, 13u, 10u, 12u}) EXPECT_EQ(pool.pop(), want);
  EXPECT_EQ(pool.pop(), detail::AStackPool::kEmpty);
}

TEST(AStackPoolTest, ThreadsNeverShareAnAStack) {
  constexpr uint32_t kCount = 3;
  detail::AStackPool pool;
  pool.init(0, kCount);
  std::atomic<int> owners[kCount] = {};
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        uint32_t idx = pool.pop();
        if (idx == detail::AStackPool::kEmpty) continue;
        if (owners[idx].fetch_add(1) != 0) errors.fetch_add(1);
        owners[idx].fetch_sub(1);
        pool.push(idx);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  std::set<uint32_t> all;
  for (uint32_t i = 0; i < kCount; ++i) all.insert(pool.pop());
  EXPECT_EQ(all, (std::set<uint32_t>{0, 1, 2}));
  EXPECT_EQ(pool.pop(), detail::AStackPool::kEmpty);
}

class DoorbellTest : public ::testing::TestWithParam<TransferMode> {
 protected:
  void SetUp() override {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    client_.reset(sv[0]);
    server_.reset(sv[1]);
  }
  OwnedFd client_, server_;
};

// One doorbell: the sequence word and its waiter's sleeping flag (as in the A-stack's blocks).
struct Bell {
  std::atomic<uint32_t> word{0};
  std::atomic<uint32_t> sleeping{0};
};

// Client and server threads calling each other over two doorbells `rounds` times; `pause`
// runs on the client before each call (to land calls while the server is about to sleep).
// Each "call" carries a value in plain memory that must be visible to the other side once it
// sees the sequence (the release/acquire pairing). A lost wake-up ends in the deadline.
template <class Pause>
void pingPong(TransferMode mode, int liveFd, uint32_t rounds, Pause pause) {
  Bell call, ret;
  std::atomic<bool> stop{false};
  uint64_t payload = 0;  // plain memory, ordered by the doorbells
  std::thread server([&] {
    uint32_t last = 0;
    for (;;) {
      uint32_t seq = 0;
      if (detail::waitForCall(call.word, call.sleeping, last, mode, stop, &seq) != detail::WaitResult::kReady) return;
      last = seq;
      payload = payload * 3 + 1;
      detail::ring(ret.word, ret.sleeping, seq);
    }
  });
  uint64_t expect = 0;
  for (uint32_t seq = 1; seq <= rounds; ++seq) {
    pause(seq);
    detail::ring(call.word, call.sleeping, seq);
    detail::WaitResult r =
        detail::waitForReturn(ret.word, ret.sleeping, seq, mode, liveFd, detail::monotonicNs() + 10'000'000'000);
    EXPECT_EQ(r, detail::WaitResult::kReady) << "round " << seq;
    if (r != detail::WaitResult::kReady) break;  // the server may still be asleep: stop it below
    expect = expect * 3 + 1;
    EXPECT_EQ(payload, expect);
  }
  stop.store(true, std::memory_order_release);
  detail::stopWaiter(call.word);
  server.join();
  EXPECT_EQ(call.sleeping.load(), 0u);  // a waiter that woke took its flag back
  EXPECT_EQ(ret.sleeping.load(), 0u);
}

TEST_P(DoorbellTest, PingPongCarriesData) {
  pingPong(GetParam(), client_.get(), 2000, [](uint32_t) {});
}

// Calls land at every moment of the server's way to sleep: while it spins, as it sets its
// flag, as it enters futex_wait, while it sleeps. None may be lost (publisher and sleeper each
// store, fence, then load the other's word).
TEST_P(DoorbellTest, NoWakeUpIsLostAsTheWaiterFallsAsleep) {
  uint64_t x = 0x9e3779b97f4a7c15ull;
  pingPong(GetParam(), client_.get(), 3000, [&](uint32_t) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    // 0 to ~65 us of spinning: around the adaptive budget (~28 us) and beyond.
    int64_t until = detail::monotonicNs() + static_cast<int64_t>(x % 65'536);
    while (detail::monotonicNs() < until) detail::cpuRelax();
  });
}

TEST_P(DoorbellTest, WaiterSeesPeerDeathAndDeadline) {
  Bell ret;
  EXPECT_EQ(detail::waitForReturn(ret.word, ret.sleeping, 1, GetParam(), client_.get(), detail::monotonicNs() + 20'000'000),
            detail::WaitResult::kTimedOut);
  server_.reset();  // the "server" goes away
  EXPECT_EQ(detail::waitForReturn(ret.word, ret.sleeping, 1, GetParam(), client_.get(), 0), detail::WaitResult::kPeerDied);
}

TEST_P(DoorbellTest, StopWakesAnIdleServer) {
  Bell call;
  std::atomic<bool> stop{false};
  std::atomic<int> result{-1};
  std::thread server([&] {
    uint32_t seq = 0;
    result.store(static_cast<int>(detail::waitForCall(call.word, call.sleeping, 0, GetParam(), stop, &seq)));
  });
  stop.store(true, std::memory_order_release);
  detail::stopWaiter(call.word);
  server.join();
  EXPECT_EQ(result.load(), static_cast<int>(detail::WaitResult::kStopped));
}

INSTANTIATE_TEST_SUITE_P(Modes, DoorbellTest,
                         ::testing::ValuesIn(kTransferModes), modeTestName);

}  // namespace
}  // namespace lrpc
