// A hostile server, as its client sees it: while client threads call, a vandal rewrites every
// field the server writes (the return block's status, tail length, flags, doorbell and
// released object, the results and the result tail) with random values. Whatever it writes, each call must end with
// a value or an error whose detail stays inside the frame, never a read beyond it (run under
// AddressSanitizer in CI) and never a hang past the call's deadline.
//
// The vandal is a thread of the client process writing the shared region, so the client's
// reads race with it inside one process; that race is the point (it stands for the server
// process), so this test is not in the ThreadSanitizer set.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "runtime/astack.h"
#include "runtime/import.h"
#include "runtime/local_binding.h"
#include "tests/integration/servers.h"

namespace lrpc::testing {
namespace {

TEST(VandalServerTest, RewritingEveryReturnFieldNeverBreaksTheClient) {
  TempDir dir;
  TestServer server(dir.path(), "svc");
  ASSERT_TRUE(server.ok());
  ImportOptions o;
  o.dir = dir.path();
  o.mode = TransferMode::kSpin;  // a vandalised sleeping flag must not turn into a lost wake-up
  o.astackWait = std::chrono::milliseconds(20);
  Result<TestService::Client> plain = lrpc::import<TestService>("svc", o);
  ASSERT_TRUE(plain.isOk()) << plain.status().toString();
  TestService::Client c = plain->withOptions(CallOptions{std::chrono::milliseconds(20)});
  LocalBinding* lb = c.binding()->local;
  ASSERT_NE(lb, nullptr);
  // Start every A-stack's server thread first, so that the vandal meets running calls.
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(c.null().isOk());
    ASSERT_TRUE(c.echo(std::vector<uint8_t>(100, 7)).isOk());
  }

  const RegionLayout& layout = lb->layout();
  // The largest detail an error can carry: what the frame holds after the fixed results.
  uint32_t frameRoom = 0;
  for (uint32_t p = 0; p < layout.procedureCount(); ++p) {
    frameRoom = std::max(frameRoom, layout.procedure(p).frameBytes - layout.procedure(p).resultsOff);
  }

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> writes{0};
  std::thread vandal([&] {
    std::mt19937 rng(4242);
    while (!stop.load(std::memory_order_relaxed)) {
      writes.fetch_add(1, std::memory_order_relaxed);
      const uint32_t index = rng() % layout.astackCount();
      const ProcedureLayout& pl = layout.procedure(layout.procedureOf(index));
      ReturnControl* ret = lb->returnControl(index);
      switch (rng() % 8) {
        case 0: detail::storeOnce(ret->resultTail, static_cast<uint32_t>(rng())); break;
        case 1: detail::storeOnce(ret->resultTail, static_cast<uint32_t>(rng() % (2 * pl.frameBytes + 1))); break;
        case 2: detail::storeOnce(ret->status, static_cast<uint8_t>(rng())); break;
        case 3: detail::storeOnce(ret->resultFlags, static_cast<uint8_t>(rng() % 4)); break;
        case 4: ret->returnWord.store(static_cast<uint32_t>(rng()), std::memory_order_relaxed); break;
        case 5: detail::storeOnce(ret->releasedId, static_cast<uint32_t>(rng())); break;
        default: {
          // The results and the result tail: every byte after the return block.
          auto* words = reinterpret_cast<uint32_t*>(reinterpret_cast<std::byte*>(ret) + kControlBytes);
          const uint32_t count = (pl.frameBytes - pl.resultsOff) / 4;
          if (count != 0) detail::storeOnce(words[rng() % count], static_cast<uint32_t>(rng()));
          break;
        }
      }
    }
  });

  // At least kCalls each, and on until the vandal has broken a call (within 10 s): on two
  // loaded vCPUs the vandal may not run at all while 800 calls take 20 ms.
  constexpr int kCalls = 400;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::atomic<int> ok{0}, failed{0}, made{0};
  while (writes.load() == 0) std::this_thread::yield();  // the vandal is at work
  auto caller = [&](unsigned seed) {
    std::mt19937 rng(seed);
    for (int i = 0; i < kCalls || (failed.load() == 0 && std::chrono::steady_clock::now() < until); ++i) {
      made.fetch_add(1);
      Status s;
      switch (rng() % 3) {
        case 0: s = c.null(); break;
        case 1: s = c.add(1, 2).status(); break;
        default: {
          Result<std::vector<uint8_t>> r = c.echo(std::vector<uint8_t>(rng() % 1200, 1));
          if (r.isOk()) {
            EXPECT_LE(r->size(), frameRoom);  // inline tails only: never more than the frame
          }
          s = r.status();
        }
      }
      if (s.isOk()) {
        ok.fetch_add(1);
      } else {
        failed.fetch_add(1);
        EXPECT_LE(s.detail().size(), std::max<size_t>(frameRoom, 256)) << s.toString().substr(0, 200);
      }
    }
  };
  std::thread a(caller, 1), b(caller, 2);
  a.join();
  b.join();
  stop.store(true);
  vandal.join();
  EXPECT_EQ(ok.load() + failed.load(), made.load());
  EXPECT_GT(failed.load(), 0) << "the vandal never got through: the test tested nothing";
  EXPECT_EQ(::kill(server.pid(), 0), 0) << "the server died of its client's vandal";
}

// The same for large results, which the server streams: the vandal rewrites the echo A-stacks'
// stream count (ReturnControl::resultReady: backwards, past the tail, stuck), their tail length
// and flags while results of 256-600 KB are copied out. Each call ends with a value or an
// error before its deadline is long past, and reads nothing outside the segment.
TEST(VandalServerTest, RewritingAStreamedResultNeverBreaksTheClient) {
  TempDir dir;
  TestServer server(dir.path(), "svc");
  ASSERT_TRUE(server.ok());
  ImportOptions o;
  o.dir = dir.path();
  o.mode = TransferMode::kSpin;
  o.astackWait = std::chrono::milliseconds(50);
  Result<TestService::Client> plain = lrpc::import<TestService>("svc", o);
  ASSERT_TRUE(plain.isOk()) << plain.status().toString();
  TestService::Client c = plain->withOptions(CallOptions{std::chrono::milliseconds(50)});
  LocalBinding* lb = c.binding()->local;
  ASSERT_NE(lb, nullptr);
  const ProcedureLayout& pl = lb->procedure(TestService::kEcho).layout;
  for (uint32_t i = 0; i < 3; ++i) ASSERT_TRUE(c.echo(std::vector<uint8_t>(kStreamBytes + i, 7)).isOk());

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> writes{0};
  std::thread vandal([&] {
    std::mt19937 rng(777);
    while (!stop.load(std::memory_order_relaxed)) {
      writes.fetch_add(1, std::memory_order_relaxed);
      ReturnControl* ret = lb->returnControl(pl.firstAStack + rng() % pl.count);
      switch (rng() % 5) {
        case 0: ret->resultReady.store(static_cast<uint32_t>(rng()), std::memory_order_relaxed); break;
        case 1: ret->resultReady.store(static_cast<uint32_t>(rng() % (1 << 20)), std::memory_order_relaxed); break;
        case 2: detail::storeOnce(ret->resultTail, static_cast<uint32_t>(rng() % (2 << 20))); break;
        case 3: detail::storeOnce(ret->resultFlags, static_cast<uint8_t>(rng() % 8)); break;
        default: ret->returnWord.store(static_cast<uint32_t>(rng()), std::memory_order_relaxed); break;
      }
      if (rng() % 64 == 0) std::this_thread::yield();
    }
  });

  std::atomic<int> ok{0}, failed{0};
  while (writes.load() == 0) std::this_thread::yield();
  auto caller = [&](unsigned seed) {
    std::mt19937 rng(seed);
    for (int i = 0; i < 150; ++i) {
      const size_t n = kStreamBytes + rng() % 350'000;
      const auto start = std::chrono::steady_clock::now();
      Result<std::vector<uint8_t>> r = c.echo(std::vector<uint8_t>(n, 3));
      // The deadline, plus a stall of the stream (kStreamStallNs) at most, plus slack.
      EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
      if (r.isOk()) {
        EXPECT_LE(r->size(), size_t{2} << 20);  // never more than the vandal's largest tail
        ok.fetch_add(1);
      } else {
        failed.fetch_add(1);
      }
    }
  };
  std::thread a(caller, 1), b(caller, 2);
  a.join();
  b.join();
  stop.store(true);
  vandal.join();
  EXPECT_GT(failed.load(), 0) << "the vandal never got through: the test tested nothing";
  EXPECT_EQ(::kill(server.pid(), 0), 0) << "the server died of its client's vandal";
}

}  // namespace
}  // namespace lrpc::testing
