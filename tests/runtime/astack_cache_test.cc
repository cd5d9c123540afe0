// The per-thread A-stack cache (runtime/astack_cache.h) between threads of one process: a lane
// is used by its owner alone, an idle or gone owner's A-stack is taken back when the pool runs
// dry, and one in a call never is. Labelled "concurrency": run under ThreadSanitizer.
#include "runtime/astack_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "runtime/local_binding.h"

namespace lrpc::detail {
namespace {

class AStackCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The cache needs the kernel's process-wide barrier; without it every call uses the pool.
    ASSERT_TRUE(enableProcessBarrier()) << "membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) failed";
  }
  // What a thread's revoke() finds, run on a thread of its own (as a thread whose pool ran dry).
  static uint32_t revokeFromAnotherThread(AStackCache& cache) {
    uint32_t got = AStackCache::kNone;
    std::thread([&] { got = cache.revoke(); }).join();
    return got;
  }
};

TEST_F(AStackCacheTest, AKeptAStackComesBackToItsThread) {
  AStackCache cache;
  cache.init(4, true);
  EXPECT_EQ(cache.lanes(), 2u);
  const uintptr_t self = threadSelf();
  EXPECT_EQ(cache.take(self), nullptr);  // nothing kept yet
  ASSERT_TRUE(cache.keep(7, self));
  AStackCache::Lane* lane = cache.take(self);
  ASSERT_NE(lane, nullptr);
  EXPECT_EQ(lane->index, 7u);
  // A nested call of the same thread (a callback it runs while it waits) takes from the pool.
  EXPECT_EQ(cache.take(self), nullptr);
  EXPECT_FALSE(cache.keep(8, self));  // its lane is taken: the other A-stack goes to the pool
  AStackCache::finish(*lane);
  lane = cache.take(self);
  ASSERT_NE(lane, nullptr);
  EXPECT_EQ(lane->index, 7u);
  AStackCache::finish(*lane);
}

TEST_F(AStackCacheTest, OneAStackMakesNoLane) {
  AStackCache cache;
  cache.init(1, true);
  EXPECT_EQ(cache.lanes(), 0u);
  EXPECT_FALSE(cache.keep(0, threadSelf()));
  AStackCache off;
  off.init(8, false);
  EXPECT_FALSE(off.keep(0, threadSelf()));
}

TEST_F(AStackCacheTest, AnIdleLaneIsRevokedAndItsOwnerGoesToThePool) {
  AStackCache cache;
  cache.init(2, true);
  const uintptr_t self = threadSelf();
  ASSERT_TRUE(cache.keep(3, self));
  EXPECT_EQ(revokeFromAnotherThread(cache), 3u);
  EXPECT_EQ(cache.take(self), nullptr);             // the owner no longer has it
  EXPECT_EQ(revokeFromAnotherThread(cache), AStackCache::kNone);  // taken once only
  ASSERT_TRUE(cache.keep(4, self));                 // the lane is free again
  AStackCache::Lane* lane = cache.take(self);
  ASSERT_NE(lane, nullptr);
  EXPECT_EQ(lane->index, 4u);
  AStackCache::finish(*lane);
}

TEST_F(AStackCacheTest, ALaneInACallIsNotRevoked) {
  AStackCache cache;
  cache.init(2, true);
  const uintptr_t self = threadSelf();
  ASSERT_TRUE(cache.keep(5, self));
  AStackCache::Lane* lane = cache.take(self);
  ASSERT_NE(lane, nullptr);
  EXPECT_EQ(revokeFromAnotherThread(cache), AStackCache::kNone);
  AStackCache::finish(*lane);
  // The failed revoke gave the lane back untouched.
  lane = cache.take(self);
  ASSERT_NE(lane, nullptr);
  EXPECT_EQ(lane->index, 5u);
  AStackCache::finish(*lane);
  EXPECT_EQ(revokeFromAnotherThread(cache), 5u);
}

TEST_F(AStackCacheTest, AThreadThatHasGoneLeavesItsAStackToBeRevoked) {
  AStackCache cache;
  cache.init(2, true);
  std::thread([&] { EXPECT_TRUE(cache.keep(9, threadSelf())); }).join();
  EXPECT_EQ(cache.revoke(), 9u);
}

TEST_F(AStackCacheTest, DropEmptiesTheLane) {
  AStackCache cache;
  cache.init(2, true);
  const uintptr_t self = threadSelf();
  ASSERT_TRUE(cache.keep(6, self));
  AStackCache::Lane* lane = cache.take(self);
  ASSERT_NE(lane, nullptr);
  AStackCache::drop(*lane);  // abandoned to a late return: in no list until it comes
  EXPECT_EQ(cache.take(self), nullptr);
  EXPECT_EQ(revokeFromAnotherThread(cache), AStackCache::kNone);
  EXPECT_TRUE(cache.keep(7, self));
}

// Threads taking A-stacks as LocalCall does (their lane, else the pool, else a revoke), with
// fewer A-stacks than threads: no A-stack is ever in two calls at once, none is lost.
TEST_F(AStackCacheTest, ThreadsNeverShareAnAStack) {
  constexpr uint32_t kCount = 4;
  AStackPool pool;
  pool.init(0, kCount);
  AStackCache cache;
  cache.init(kCount, true);
  std::atomic<int> owners[kCount] = {};
  std::atomic<int> errors{0};
  std::atomic<int> calls{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      const uintptr_t self = threadSelf();
      for (int i = 0; i < 4000; ++i) {
        AStackCache::Lane* lane = cache.take(self);
        uint32_t idx = lane != nullptr ? lane->index : pool.pop();
        if (idx == AStackPool::kEmpty) idx = cache.revoke();
        if (idx == AStackCache::kNone) {
          std::this_thread::yield();
          continue;
        }
        if (owners[idx].fetch_add(1) != 0) errors.fetch_add(1);
        if (t % 2 == 0 && i % 64 == 0) std::this_thread::yield();  // a call that takes a while
        owners[idx].fetch_sub(1);
        calls.fetch_add(1);
        if (lane != nullptr) {
          AStackCache::finish(*lane);
        } else if (!cache.keep(idx, self)) {
          pool.push(idx);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_GT(calls.load(), 0);
  // Every A-stack is in the pool or a lane (whose threads have all gone).
  std::set<uint32_t> all;
  for (uint32_t i = pool.pop(); i != AStackPool::kEmpty; i = pool.pop()) all.insert(i);
  for (uint32_t i = cache.revoke(); i != AStackCache::kNone; i = cache.revoke()) all.insert(i);
  EXPECT_EQ(all, (std::set<uint32_t>{0, 1, 2, 3}));
}

}  // namespace
}  // namespace lrpc::detail
