// The export table (runtime/cap_table.h) under calls: an object released or dropped by close()
// while a call runs on it lives until that call ends and is destroyed exactly once; ids that
// are stale, forged or out of range stay kBadFrame; and server threads that look up, call,
// add and release at once (run under ThreadSanitizer too: label concurrency).
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "caps.lrpc.h"
#include "runtime/cap_table.h"
#include "runtime/capability.h"

namespace lrpc::testing {
namespace {

// Holds a call inside its handler until the test lets it go.
class Gate {
 public:
  void pass() noexcept {
    inside_.fetch_add(1);
    while (!open_.load()) std::this_thread::yield();
  }
  void awaitInside(int n) const noexcept {
    while (inside_.load() < n) std::this_thread::yield();
  }
  void open() noexcept { open_.store(true); }

 private:
  std::atomic<int> inside_{0};
  std::atomic<bool> open_{false};
};

// What the objects of one test went through: destructions, and calls that found their object
// destroyed (which must never happen).
struct Tally {
  std::atomic<int> destroyed{0};
  std::atomic<int> callsOnDestroyed{0};
};

class TestCounter final : public caps::Counter::Server {
 public:
  TestCounter(Tally& tally, Gate* gate) noexcept : tally_(tally), gate_(gate) {}
  ~TestCounter() override {
    alive_.store(false);
    tally_.destroyed.fetch_add(1);
  }
  Result<int64_t> add(int64_t n) override {
    if (!alive_.load()) tally_.callsOnDestroyed.fetch_add(1);
    if (gate_ != nullptr) gate_->pass();
    return n;
  }
  Result<std::string> label() override { return std::string(); }

 private:
  Tally& tally_;
  Gate* gate_;
  std::atomic<bool> alive_{true};
};

HostedObject counter(Tally& tally, Gate* gate = nullptr) {
  auto object = std::make_shared<TestCounter>(tally, gate);
  return {&caps::Counter::kDescriptor, std::shared_ptr<void>(object, static_cast<caps::Counter::Server*>(object.get()))};
}

// The tunnel call Counter.add(n) on `id`, as a server thread receives it.
class TunnelCall final : public ServerCall {
 public:
  TunnelCall(CapTable& table, uint32_t id, int64_t n) noexcept
      : ServerCall(std::span<const std::byte>(args_, sizeof args_), std::span<const std::byte>(tail_, sizeof tail_),
                   results_),
        table_(table) {
    const detail::CapCallArgs head{{0, sizeof tail_}, id, caps::Counter::kAdd, caps::Counter::kDescriptor.id};
    std::memcpy(args_, &head, sizeof head);
    std::memcpy(tail_, &n, sizeof n);
  }
  Result<std::span<std::byte>> resultTail(size_t n) noexcept override {
    if (n > sizeof replyTail_) return Status(Errc::kResourceExhausted, "no room");
    return std::span<std::byte>(replyTail_, n);
  }
  CapTable* capTable() noexcept override { return &table_; }
  // The handler's result, read where the tunnel's results say the inner reply lies.
  int64_t total() const noexcept {
    detail::CapCallResults r;
    std::memcpy(&r, results_, sizeof r);
    int64_t total = 0;
    if (r.frame.length >= sizeof total) std::memcpy(&total, replyTail_ + r.frame.offset, sizeof total);
    return total;
  }

 private:
  CapTable& table_;
  alignas(8) std::byte args_[sizeof(detail::CapCallArgs)];
  alignas(8) std::byte tail_[sizeof(int64_t)];
  alignas(8) std::byte results_[sizeof(detail::CapCallResults)] = {};
  alignas(8) std::byte replyTail_[64] = {};
};

Status callAdd(CapTable& table, uint32_t id, int64_t n, int64_t* total = nullptr) {
  TunnelCall call(table, id, n);
  Status s = detail::serveCapCall(call);
  if (s.isOk() && total != nullptr) *total = call.total();
  return s;
}

TEST(CapTable, CallsTheObjectAnIdNames) {
  Tally tally;
  {
    CapTable table;
    auto id = table.add(counter(tally));
    ASSERT_TRUE(id.isOk());
    int64_t total = 0;
    ASSERT_TRUE(callAdd(table, *id, 42, &total).isOk());
    EXPECT_EQ(total, 42);
  }
  EXPECT_EQ(tally.destroyed.load(), 1);
}

TEST(CapTable, ReleaseDuringACallDestroysTheObjectWhenTheCallEnds) {
  Tally tally;
  Gate gate;
  CapTable table;
  auto id = table.add(counter(tally, &gate));
  ASSERT_TRUE(id.isOk());
  Status status;
  int destroyedAtEnd = -1;
  std::thread server([&] {
    status = callAdd(table, *id, 1);
    destroyedAtEnd = tally.destroyed.load();
  });
  gate.awaitInside(1);
  ASSERT_TRUE(table.release(*id).isOk());
  EXPECT_EQ(tally.destroyed.load(), 0);  // the running call still holds it
  EXPECT_EQ(table.live(), 0u);
  // The id is gone at once, though its object is not.
  EXPECT_EQ(table.release(*id).code(), Errc::kBadFrame);
  EXPECT_EQ(table.find(*id, caps::Counter::kDescriptor.id).status().code(), Errc::kBadFrame);
  EXPECT_EQ(callAdd(table, *id, 1).code(), Errc::kBadFrame);
  gate.open();
  server.join();
  EXPECT_TRUE(status.isOk()) << status.toString();
  EXPECT_EQ(destroyedAtEnd, 1);  // by the call's end, before it returned
  EXPECT_EQ(tally.callsOnDestroyed.load(), 0);
  // The slot is free again, and its object is not destroyed a second time with the table.
  EXPECT_TRUE(table.add(counter(tally)).isOk());
  EXPECT_EQ(tally.destroyed.load(), 1);
}

TEST(CapTable, StaleForgedAndOutOfRangeIdsAreBadFrames) {
  Tally tally;
  CapTable table;
  auto first = table.add(counter(tally));
  ASSERT_TRUE(first.isOk());
  // A lookup as another interface is refused, and counts nothing that would keep the object.
  EXPECT_EQ(table.find(*first, caps::Factory::kDescriptor.id).status().code(), Errc::kBadFrame);
  ASSERT_TRUE(table.release(*first).isOk());
  EXPECT_EQ(tally.destroyed.load(), 1);
  // The slot is reused by the next object, under a new generation.
  auto second = table.add(counter(tally));
  ASSERT_TRUE(second.isOk());
  EXPECT_EQ(*second & 0xFFFFFu, *first & 0xFFFFFu);
  EXPECT_NE(*second, *first);
  EXPECT_EQ(table.find(*first, caps::Counter::kDescriptor.id).status().code(), Errc::kBadFrame);
  EXPECT_EQ(callAdd(table, *first, 1).code(), Errc::kBadFrame);
  EXPECT_EQ(table.release(*first).code(), Errc::kBadFrame);
  int64_t total = 0;
  ASSERT_TRUE(callAdd(table, *second, 7, &total).isOk());
  EXPECT_EQ(total, 7);
  // A slot made but never handed out, one past any chunk, the last there can be, a zero slot
  // field, and an id the client would host.
  for (uint32_t id : {*second + 1, 0x7FFFu, 0xFFFFFu, 0xFFFFEu, 0x100000u, kClientHostedCap | *second}) {
    EXPECT_EQ(callAdd(table, id, 1).code(), Errc::kBadFrame) << id;
    EXPECT_EQ(table.release(id).code(), Errc::kBadFrame) << id;
  }
  EXPECT_EQ(tally.destroyed.load(), 1);
  ASSERT_TRUE(table.release(*second).isOk());
  EXPECT_EQ(tally.destroyed.load(), 2);
  EXPECT_EQ(tally.callsOnDestroyed.load(), 0);
}

TEST(CapTable, GrowsAcrossChunksAndKeepsItsBound) {
  Tally tally;
  CapTable table(300);
  std::vector<uint32_t> ids;
  for (int i = 0; i < 300; ++i) {
    auto id = table.add(counter(tally));
    ASSERT_TRUE(id.isOk()) << i;
    ids.push_back(*id);
  }
  EXPECT_EQ(table.add(counter(tally)).status().code(), Errc::kResourceExhausted);
  EXPECT_EQ(tally.destroyed.load(), 1);  // the refused one
  for (size_t i = 0; i < ids.size(); ++i) {
    int64_t total = 0;
    ASSERT_TRUE(callAdd(table, ids[i], static_cast<int64_t>(i), &total).isOk()) << i;
    EXPECT_EQ(total, static_cast<int64_t>(i));
  }
  for (uint32_t id : ids) ASSERT_TRUE(table.release(id).isOk());
  EXPECT_EQ(table.live(), 0u);
  EXPECT_EQ(tally.destroyed.load(), 301);
}

TEST(CapTable, CloseWithCallsInFlight) {
  Tally tally;
  Gate gate;
  CapTable table;
  auto busy1 = table.add(counter(tally, &gate));
  auto busy2 = table.add(counter(tally, &gate));
  auto idle = table.add(counter(tally));
  ASSERT_TRUE(busy1.isOk() && busy2.isOk() && idle.isOk());
  std::vector<Status> statuses(2);
  std::vector<int> destroyedAtEnd(2, -1);
  std::vector<std::thread> servers;
  const uint32_t busy[] = {*busy1, *busy2};
  for (int i = 0; i < 2; ++i) {
    servers.emplace_back([&, i] {
      statuses[i] = callAdd(table, busy[i], 1);
      destroyedAtEnd[i] = tally.destroyed.load();
    });
  }
  gate.awaitInside(2);
  table.close();
  EXPECT_EQ(tally.destroyed.load(), 1);  // the idle one, at once
  EXPECT_EQ(table.live(), 0u);
  EXPECT_EQ(table.add(counter(tally)).status().code(), Errc::kPeerDied);
  EXPECT_EQ(tally.destroyed.load(), 2);  // the refused one
  for (uint32_t id : {*busy1, *busy2, *idle}) {
    EXPECT_EQ(table.find(id, caps::Counter::kDescriptor.id).status().code(), Errc::kBadFrame);
    EXPECT_EQ(callAdd(table, id, 1).code(), Errc::kBadFrame);
    EXPECT_EQ(table.release(id).code(), Errc::kBadFrame);
  }
  gate.open();
  for (std::thread& t : servers) t.join();
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(statuses[i].isOk()) << statuses[i].toString();
    EXPECT_GE(destroyedAtEnd[i], 3);  // its own object went before its call returned
  }
  EXPECT_EQ(tally.destroyed.load(), 4);
  EXPECT_EQ(tally.callsOnDestroyed.load(), 0);
}

// Server threads of one binding: each calls and looks up ids the others publish, while it adds
// objects and releases the ones it takes back. Every call either reaches a live object or is a
// kBadFrame, and every object is destroyed exactly once.
TEST(CapTable, ThreadsFindCallAddAndReleaseAtOnce) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 20000;
  constexpr size_t kPublished = 16;
  Tally tally;
  std::atomic<int> made{0};
  std::atomic<int> calledOk{0};
  std::atomic<int> unexpected{0};
  {
    CapTable table(64);
    std::vector<std::atomic<uint32_t>> published(kPublished);
    std::vector<std::thread> threads;
    std::atomic<int> started{0};
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        started.fetch_add(1);
        while (started.load() < kThreads) std::this_thread::yield();  // so that they overlap
        uint32_t seed = 0x9E3779B9u * static_cast<uint32_t>(t + 1);
        auto next = [&seed] {
          seed ^= seed << 13;
          seed ^= seed >> 17;
          seed ^= seed << 5;
          return seed;
        };
        for (int i = 0; i < kRounds; ++i) {
          const uint32_t r = next();
          std::atomic<uint32_t>& place = published[(r >> 8) % kPublished];
          if (r % 4 == 0) {
            auto id = table.add(counter(tally));
            made.fetch_add(1);
            if (!id.isOk()) {
              unexpected.fetch_add(1);
              continue;
            }
            // This thread owns the id it takes out: its release must succeed.
            if (uint32_t old = place.exchange(*id); old != kNullCap && !table.release(old).isOk()) {
              unexpected.fetch_add(1);
            }
          } else if (r % 4 == 1) {
            auto object = table.find(place.load(), caps::Counter::kDescriptor.id);
            if (!object.isOk() && object.status().code() != Errc::kBadFrame) unexpected.fetch_add(1);
          } else {
            int64_t total = 0;
            Status s = callAdd(table, place.load(), i, &total);
            if (s.isOk() && total == i) {
              calledOk.fetch_add(1);
            } else if (s.code() != Errc::kBadFrame) {
              unexpected.fetch_add(1);
            }
          }
        }
      });
    }
    for (std::thread& t : threads) t.join();
    for (std::atomic<uint32_t>& place : published) {
      if (uint32_t id = place.load(); id != kNullCap) {
        EXPECT_TRUE(table.release(id).isOk());
      }
    }
    EXPECT_EQ(table.live(), 0u);
    EXPECT_EQ(tally.destroyed.load(), made.load());
  }
  EXPECT_EQ(tally.destroyed.load(), made.load());
  EXPECT_EQ(unexpected.load(), 0);
  EXPECT_EQ(tally.callsOnDestroyed.load(), 0);
  EXPECT_GT(calledOk.load(), 0);
}

// Adds race close(): each either gets an id or kPeerDied, and close() leaves nothing live, however
// the two interleave, with every object destroyed exactly once.
TEST(CapTable, CloseRacesAdds) {
  constexpr int kThreads = 3;
  Tally tally;
  std::atomic<int> made{0};
  std::atomic<int> unexpected{0};
  for (int round = 0; round < 200; ++round) {
    CapTable table(1000);
    std::atomic<bool> go{false};
    std::vector<std::thread> adders;
    for (int t = 0; t < kThreads; ++t) {
      adders.emplace_back([&] {
        while (!go.load()) std::this_thread::yield();
        for (int i = 0; i < 50; ++i) {
          made.fetch_add(1);
          auto id = table.add(counter(tally));
          if (!id.isOk() && id.status().code() != Errc::kPeerDied) unexpected.fetch_add(1);
        }
      });
    }
    go.store(true);
    std::this_thread::yield();
    table.close();
    for (std::thread& t : adders) t.join();
    EXPECT_EQ(table.live(), 0u) << round;
    EXPECT_EQ(tally.destroyed.load(), made.load()) << round;
  }
  EXPECT_EQ(unexpected.load(), 0);
}

// Threads add and release at the table's bound: none ever gets past it, an add refused there
// succeeds once a slot is given back, and the slots are reused (the table does not grow).
TEST(CapTable, ThreadsAddAndReleaseAtTheBound) {
  constexpr int kThreads = 4;
  constexpr uint32_t kLimit = 8;
  Tally tally;
  std::atomic<int> made{0};
  std::atomic<int> unexpected{0};
  std::atomic<int> refused{0};
  std::atomic<int> arrived{0};
  {
    CapTable table(kLimit);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        std::vector<uint32_t> mine;
        auto tryAdd = [&] {
          made.fetch_add(1);
          auto id = table.add(counter(tally));
          if (id.isOk()) {
            mine.push_back(*id);
          } else if (id.status().code() == Errc::kResourceExhausted) {
            refused.fetch_add(1);
          } else {
            unexpected.fetch_add(1);
          }
        };
        // First, all at once: four threads ask for four each, so exactly the bound's worth
        // succeed, whatever the order.
        for (int i = 0; i < 4; ++i) tryAdd();
        arrived.fetch_add(1);
        while (arrived.load() < kThreads) std::this_thread::yield();
        for (int i = 0; i < 5000; ++i) {
          if (mine.size() < 4) tryAdd();  // four threads would hold twice the bound
          if (table.live() > kLimit) unexpected.fetch_add(1);
          if (!mine.empty() && (i % 5 == 0 || mine.size() == 4)) {
            if (!table.release(mine.back()).isOk()) unexpected.fetch_add(1);
            mine.pop_back();
          }
        }
        for (uint32_t id : mine) {
          if (!table.release(id).isOk()) unexpected.fetch_add(1);
        }
      });
    }
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(table.live(), 0u);
    // Every slot is free again: the bound's worth of adds succeed at once.
    std::vector<uint32_t> ids;
    for (uint32_t i = 0; i < kLimit; ++i) {
      made.fetch_add(1);
      auto id = table.add(counter(tally));
      ASSERT_TRUE(id.isOk()) << i;
      EXPECT_LE(*id & 0xFFFFFu, kLimit) << "a slot past the bound";
      ids.push_back(*id);
    }
    made.fetch_add(1);
    EXPECT_EQ(table.add(counter(tally)).status().code(), Errc::kResourceExhausted);
  }
  EXPECT_EQ(tally.destroyed.load(), made.load());
  EXPECT_EQ(unexpected.load(), 0);
  EXPECT_GE(refused.load(), kThreads * 4 - static_cast<int>(kLimit));
}

}  // namespace
}  // namespace lrpc::testing
