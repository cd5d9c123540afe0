// Asynchronous calls (runtime/pending.h) through generated stubs, against a server in another
// process: on the same host (adaptive and spinning bindings) and across two network
// namespaces (io_uring and emulated endpoints). Completion by wait(), ready(), then() with a
// queue, coroutines with and without a queue, and a queue's fd in a poll() loop; cancellation
// while running, after completion and by destruction; deadlines and a killed server with
// calls in flight; packet loss with pipelined calls; threads and coroutines on one binding.
#include <gtest/gtest.h>
#include <poll.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <chrono>
#include <coroutine>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "async.lrpc.h"
#include "runtime/exporter.h"
#include "runtime/import.h"
#include "runtime/send_batch.h"
#include "tests/async/work_impl.h"
#include "tests/integration/harness.h"
#include "tests/testing/service_process.h"
#include "tests/transport/net_harness.h"
#include "tests/transport/udp_server_child.h"
#include "transport/client.h"
#include "transport/server.h"

namespace lrpc::asynctest {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// The smallest coroutine type a user might write: starts at once, nothing to await it with.
// lrpc needs no task type of its own.
struct Task {
  struct promise_type {
    Task get_return_object() noexcept { return {}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::terminate(); }
  };
};

enum class Path { kLocalAdaptive, kLocalSpin, kNetUring, kNetEmulated };

bool isNet(Path p) { return p == Path::kNetUring || p == Path::kNetEmulated; }

net::ClientOptions netClientOptions(bool emulated) {
  net::ClientOptions co;
  co.emulatedEndpoint = emulated;
  co.initialRto = std::chrono::milliseconds(10);
  co.maxRetries = 14;
  co.security.clearText = true;
  return co;
}

uint16_t serveNet(const std::string& bind, bool emulated) {
  net::ServerOptions so = net::testing::clearTextServer();
  so.emulatedEndpoint = emulated;
  so.workers = 32;  // every slow call of a full window runs at once
  return net::testing::startUdpServer(bind, so,
                                      [](net::UdpServer& server) { return server.add<Work>("work", *new WorkImpl).isOk(); });
}

// A Work server in another process on the chosen path, and a client of it.
class Server {
 public:
  Status start(Path path) {
    if (!isNet(path)) {
      auto b = process_.startLocal(
          [](Exporter& e) { return e.add<Work>("work", *new WorkImpl).isOk(); },  // lives as long as the child
          Work::kDescriptor, "work", path == Path::kLocalSpin ? TransferMode::kSpin : TransferMode::kAdaptive);
      if (!b.isOk()) return b.status();
      client_ = Work::Client(*b);
      return {};
    }
    const bool emulated = path == Path::kNetEmulated;
    auto c = process_.startNet<Work>([emulated](const std::string& b) { return serveNet(b, emulated); }, "work",
                                     netClientOptions(emulated));
    if (!c.isOk()) return c.status();
    client_ = *c;
    return {};
  }

  void kill() { process_.kill(); }
  Work::Client& client() { return client_; }
  testing::NetnsPair* pair() { return process_.pair(); }

 private:
  testing::ServiceProcess process_;
  Work::Client client_;
};

class AsyncCalls : public ::testing::TestWithParam<Path> {
 protected:
  void SetUp() override {
    Status s = server_.start(GetParam());
    ASSERT_TRUE(s.isOk()) << s.toString();
  }
  Work::Client& client() { return server_.client(); }
  // Runs `queue` until `done` holds, 20 s at most.
  static void runUntil(Completions& queue, const std::function<bool()>& done) {
    const auto end = Clock::now() + 20s;
    while (!done() && Clock::now() < end) queue.run(50ms);
  }

  Server server_;
};

TEST_P(AsyncCalls, ManyInFlightFromOneThreadWithWaitAndReady) {
  auto a = client().async();
  std::vector<Pending<Result<uint64_t>>> calls;
  for (uint64_t i = 0; i < 24; ++i) calls.push_back(a.echo(i * 7 + 1));
  for (uint64_t i = 0; i < calls.size(); ++i) {
    Result<uint64_t> r = calls[i].wait();
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    EXPECT_EQ(*r, i * 7 + 1);
    EXPECT_FALSE(calls[i].valid());  // wait() took the result
  }
  // ready() drives the call without blocking; wait() then returns at once.
  auto p = a.echo(99);
  const auto end = Clock::now() + 10s;
  while (!p.ready() && Clock::now() < end) {
  }
  ASSERT_TRUE(p.ready());
  EXPECT_EQ(p.wait().value(), 99u);
  EXPECT_EQ(p.wait().status().code(), Errc::kInvalidArgument);  // nothing left to take
}

TEST_P(AsyncCalls, ArgumentsAreCopiedWhenTheCallStarts) {
  auto a = client().async();
  std::vector<Pending<Result<std::string>>> calls;
  for (int i = 0; i < 8; ++i) {
    std::string text = "call number " + std::to_string(i) + std::string(size_t(i) * 500, 'x');
    calls.push_back(a.shout(text));
    text.assign(text.size(), '#');  // the caller's buffer is free at once
  }
  for (int i = 0; i < 8; ++i) {
    Result<std::string> r = calls[size_t(i)].wait();
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    EXPECT_EQ(*r, "CALL NUMBER " + std::to_string(i) + std::string(size_t(i) * 500, 'X'));
  }
}

TEST_P(AsyncCalls, ThenRunsEachCallbackOnceFromPoll) {
  Completions queue;
  auto a = client().async(queue);
  std::vector<uint64_t> got;
  for (uint64_t i = 0; i < 20; ++i) {
    a.echo(i).then(queue, [&got](Result<uint64_t> r) { got.push_back(r.isOk() ? *r : ~0ull); });
  }
  EXPECT_TRUE(got.empty());  // nothing runs before poll()
  runUntil(queue, [&] { return got.size() == 20; });
  std::sort(got.begin(), got.end());
  ASSERT_EQ(got.size(), 20u);
  for (uint64_t i = 0; i < 20; ++i) EXPECT_EQ(got[i], i);
  EXPECT_EQ(queue.size(), 0u);
  EXPECT_EQ(queue.poll(), 0u);
}

Task addTwo(Work::Client client, Completions* queue, uint64_t* sum, bool* done) {
  auto a = queue != nullptr ? client.async(*queue) : client.async();
  auto x = a.echo(20);  // both calls in flight before the first co_await
  auto y = a.sleep(2000, 22);
  Result<uint64_t> rx = co_await x;
  Result<uint64_t> ry = co_await y;
  *sum = rx.isOk() && ry.isOk() ? *rx + *ry : 0;
  *done = true;
}

TEST_P(AsyncCalls, CoroutinesAwaitWithAndWithoutAQueue) {
  uint64_t sum = 0;
  bool done = false;
  addTwo(client(), nullptr, &sum, &done);  // no queue: each co_await waits in place
  EXPECT_TRUE(done);
  EXPECT_EQ(sum, 42u);

  Completions queue;
  std::vector<uint64_t> sums(10, 0);
  std::unique_ptr<bool[]> dones(new bool[10]());
  for (size_t i = 0; i < sums.size(); ++i) addTwo(client(), &queue, &sums[i], &dones[i]);
  runUntil(queue, [&] { return std::all_of(dones.get(), dones.get() + 10, [](bool d) { return d; }); });
  for (size_t i = 0; i < sums.size(); ++i) EXPECT_EQ(sums[i], 42u) << i;
}

TEST_P(AsyncCalls, QueueFdBecomesReadableInAPollLoop) {
  Completions queue;
  Result<int> fd = queue.fd();
  ASSERT_TRUE(fd.isOk()) << fd.status().toString();
  pollfd pfd{*fd, POLLIN, 0};
  EXPECT_EQ(::poll(&pfd, 1, 0), 0);  // nothing to run yet
  auto a = client().async(queue);
  int completed = 0;
  for (uint64_t i = 0; i < 8; ++i) {
    a.sleep(1000, i).then(queue, [&completed, i](Result<uint64_t> r) {
      EXPECT_EQ(r.value(), i);
      ++completed;
    });
  }
  const auto end = Clock::now() + 20s;
  while (completed < 8 && Clock::now() < end) {
    pfd.revents = 0;
    if (::poll(&pfd, 1, 1000) > 0) queue.poll();  // the application's own loop
  }
  EXPECT_EQ(completed, 8);
  EXPECT_EQ(queue.size(), 0u);
}

TEST_P(AsyncCalls, CancelWhileRunningReleasesTheCallerAtOnce) {
  auto a = client().async();
  auto slow = a.sleep(400'000, 7);
  std::this_thread::sleep_for(20ms);  // the handler is running
  const auto t0 = Clock::now();
  slow.cancel();
  Result<uint64_t> r = slow.wait();
  EXPECT_LT(Clock::now() - t0, 100ms);
  EXPECT_EQ(r.status().code(), Errc::kCancelled) << r.status().toString();
  // Destroying a call in flight cancels it too, without waiting for it.
  const auto t1 = Clock::now();
  { auto dropped = a.sleep(400'000, 8); }
  EXPECT_LT(Clock::now() - t1, 100ms);
  // The binding goes on working at once, and once the abandoned handlers have returned every
  // A-stack (or window slot) is usable again: all 32 at the same time.
  EXPECT_EQ(client().echo(5).value(), 5u);
  std::this_thread::sleep_for(450ms);
  std::vector<Pending<Result<uint64_t>>> all;
  for (uint64_t i = 0; i < 32; ++i) all.push_back(a.sleep(50'000, i));
  for (uint64_t i = 0; i < 32; ++i) {
    Result<uint64_t> ri = all[i].wait();
    ASSERT_TRUE(ri.isOk()) << i << ": " << ri.status().toString();
    EXPECT_EQ(*ri, i);
  }
  // Both cancelled calls still ran on the server (cancel releases the caller; it cannot
  // unsend a call): 1 echo + 2 cancelled + 32.
  EXPECT_EQ(client().ran().value(), 35u);
}

TEST_P(AsyncCalls, HandlerSeesItsCallerGiveUp) {
  // Not given up: the handler runs to its end and never sees a cancellation.
  EXPECT_EQ(client().async().watch(20'000).wait().value(), false);
  EXPECT_EQ(client().cancelsSeen().value(), 0u);
  // Cancelled, then dropped, then past its deadline: each handler learns it and stops early.
  auto waitForSeen = [&](uint64_t n) {
    const auto end = Clock::now() + 5s;
    while (client().cancelsSeen().value() < n && Clock::now() < end) std::this_thread::sleep_for(5ms);
    return client().cancelsSeen().value();
  };
  auto cancelled = client().async().watch(3'000'000);
  std::this_thread::sleep_for(30ms);
  cancelled.cancel();
  EXPECT_EQ(cancelled.wait().status().code(), Errc::kCancelled);
  EXPECT_EQ(waitForSeen(1), 1u);
  { auto dropped = client().async().watch(3'000'000); std::this_thread::sleep_for(30ms); }
  EXPECT_EQ(waitForSeen(2), 2u);
  CallOptions o;
  o.timeout = 50ms;
  EXPECT_EQ(client().withOptions(o).watch(3'000'000).status().code(), Errc::kDeadlineExceeded);
  EXPECT_EQ(waitForSeen(3), 3u);
  // A later call on the same A-stacks is not taken for a cancelled one.
  std::vector<Pending<Result<bool>>> calls;
  for (int i = 0; i < 8; ++i) calls.push_back(client().async().watch(5'000));
  for (auto& c : calls) EXPECT_EQ(c.wait().value(), false);
  EXPECT_EQ(client().cancelsSeen().value(), 3u);
}

TEST_P(AsyncCalls, CancelAfterCompletionKeepsTheResult) {
  auto p = client().async().echo(11);
  const auto end = Clock::now() + 10s;
  while (!p.ready() && Clock::now() < end) {
  }
  p.cancel();
  EXPECT_EQ(p.wait().value(), 11u);
  // Completed on the server, but nobody has looked yet: still kept. The server counts the echo
  // as it runs it (ran()), which is when it completes; the sleep after that leaves time for its
  // reply to be sent, so the test no longer guesses how long a loaded machine takes to run it.
  const uint64_t before = client().ran().value();
  auto q = client().async().echo(12);
  while (client().ran().value() == before && Clock::now() < end) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(100ms);
  q.cancel();
  EXPECT_EQ(q.wait().value(), 12u);
}

TEST_P(AsyncCalls, DeadlinePassesWithCallsInFlight) {
  CallOptions o;
  o.timeout = 100ms;
  auto a = client().withOptions(o).async();
  const auto t0 = Clock::now();
  std::vector<Pending<Result<uint64_t>>> calls;
  for (uint64_t i = 0; i < 8; ++i) calls.push_back(a.sleep(1'000'000, i));
  for (auto& c : calls) {
    Result<uint64_t> r = c.wait();
    EXPECT_EQ(r.status().code(), Errc::kDeadlineExceeded) << r.status().toString();
  }
  EXPECT_LT(Clock::now() - t0, 900ms);
  EXPECT_EQ(client().echo(3).value(), 3u);  // other A-stacks, or the next window slots
}

TEST_P(AsyncCalls, ServerKilledWithCallsInFlightCompletesEachOnceWithPeerDied) {
  Completions queue;
  auto a = client().async(queue);
  std::vector<int> completions(32, 0);
  std::vector<Errc> codes(32, Errc::kOk);
  for (size_t i = 0; i < 32; ++i) {
    a.sleep(5'000'000, i).then(queue, [&, i](Result<uint64_t> r) {
      ++completions[i];
      codes[i] = r.status().code();
    });
  }
  std::this_thread::sleep_for(100ms);
  server_.kill();
  runUntil(queue, [&] { return queue.size() == 0; });
  for (size_t i = 0; i < 32; ++i) {
    EXPECT_EQ(completions[i], 1) << i;
    EXPECT_EQ(codes[i], Errc::kPeerDied) << i;
  }
  // Later calls fail at once too.
  EXPECT_EQ(client().async().echo(1).wait().status().code(), Errc::kPeerDied);
}

TEST_P(AsyncCalls, ThreadsAndCoroutinesShareOneBinding) {
  constexpr int kThreads = 4;
  constexpr int kTasks = 20;
  std::vector<uint64_t> sums(kThreads * kTasks, 0);
  std::unique_ptr<bool[]> dones(new bool[kThreads * kTasks]());
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Completions queue;  // one per thread; the binding is shared
      for (int k = 0; k < kTasks; ++k) {
        const size_t at = size_t(t) * kTasks + size_t(k);
        addTwo(client(), &queue, &sums[at], &dones[at]);
      }
      runUntil(queue, [&] {
        return std::all_of(dones.get() + t * kTasks, dones.get() + (t + 1) * kTasks, [](bool d) { return d; });
      });
    });
  }
  // Meanwhile, one queue shared by two threads: one starts calls, the other runs them.
  Completions shared;
  std::atomic<int> completed{0};
  std::atomic<bool> started{false};
  std::thread runner([&] {
    const auto end = Clock::now() + 20s;
    while ((!started.load() || shared.size() != 0) && Clock::now() < end) shared.run(10ms);
  });
  auto a = client().async(shared);
  for (uint64_t i = 0; i < 50; ++i) {
    a.echo(i).then(shared, [&completed, i](Result<uint64_t> r) {
      if (r.isOk() && *r == i) completed.fetch_add(1);
    });
  }
  started.store(true);
  runner.join();
  for (auto& th : threads) th.join();
  EXPECT_EQ(completed.load(), 50);
  for (size_t i = 0; i < sums.size(); ++i) EXPECT_EQ(sums[i], 42u) << i;
}

std::string pathName(const ::testing::TestParamInfo<Path>& p) {
  switch (p.param) {
    case Path::kLocalAdaptive:
      return "SameHostAdaptive";
    case Path::kLocalSpin:
      return "SameHostSpin";
    case Path::kNetUring:
      return "NetnsUring";
    case Path::kNetEmulated:
      return "NetnsEmulated";
  }
  return "unknown";
}

// A `-> stream` method: synchronous calls arrive in the order made; asynchronous ones, five times
// as many as write has A-stacks started from one thread with a queue (which gives A-stacks back
// while the thread waits for one), each arrive once and intact (their order is not promised).
TEST_P(AsyncCalls, StreamMethodCallsArriveInOrderAndOverlapAsync) {
  auto chunk = [](uint32_t seq) { return std::vector<uint8_t>(seq, static_cast<uint8_t>(seq & 0xff)); };
  uint64_t bytes = 0;
  uint32_t seq = 0;
  for (; seq < 60; ++seq) {
    const std::vector<uint8_t> c = chunk(seq);
    Status s = client().write(seq, c);
    ASSERT_TRUE(s.isOk()) << s.toString();
    bytes += c.size();
  }
  Result<Work::WrittenResults> w = client().written();
  ASSERT_TRUE(w.isOk()) << w.status().toString();
  EXPECT_EQ(w->count, 60u);
  EXPECT_TRUE(w->inOrder);
  EXPECT_EQ(w->bytes, bytes);
  EXPECT_EQ(w->damaged, 0u);

  Completions queue;
  auto a = client().async(queue);
  std::vector<Pending<Status>> calls;
  for (; seq < 100; ++seq) {
    calls.push_back(a.write(seq, chunk(seq)));  // the temporary chunk is copied at the call
    bytes += seq;
  }
  for (auto& c : calls) {
    Status s = c.wait();
    EXPECT_TRUE(s.isOk()) << s.toString();
  }
  w = client().written();
  ASSERT_TRUE(w.isOk()) << w.status().toString();
  EXPECT_EQ(w->count, 100u);
  EXPECT_EQ(w->bytes, bytes);
  EXPECT_EQ(w->damaged, 0u);
}

TEST_P(AsyncCalls, ASendBatchSendsABurstInOneSystemCall) {
  auto* channel = isNet(GetParam()) ? dynamic_cast<net::UdpChannel*>(client().binding()->channel) : nullptr;
  ASSERT_EQ(channel != nullptr, isNet(GetParam()));
  const auto sends = [&] { return channel ? channel->stats().requestSends : 0; };
  std::vector<Pending<Result<uint64_t>>> calls;
  const uint64_t before = sends();
  {
    SendBatch batch;
    for (uint64_t i = 0; i < 16; ++i) calls.push_back(client().async().echo(i));
    EXPECT_EQ(sends(), before);  // held
  }
  if (channel) {
    EXPECT_EQ(sends(), before + 1);  // the burst, in one endpoint send
  }
  for (uint64_t i = 0; i < calls.size(); ++i) {
    Result<uint64_t> r = calls[i].wait();
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    EXPECT_EQ(*r, i);
  }
  {
    // A wait inside the batch sends what it holds first.
    SendBatch batch;
    auto kept = client().async().echo(41);
    auto dropped = client().async().echo(42);
    dropped.cancel();
    Result<uint64_t> r = kept.wait();
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    EXPECT_EQ(*r, 41u);
    // Cancelled or answered, once: a cancel first takes one look to keep a result that has
    // arrived (same host, the call went out at once), and that look sends what the batch holds.
    Result<uint64_t> d = dropped.wait();
    EXPECT_TRUE(d.status().code() == Errc::kCancelled || (d.isOk() && *d == 42u)) << d.status().toString();
    // A synchronous call inside a batch is not held.
    auto sync = client().echo(43);
    ASSERT_TRUE(sync.isOk()) << sync.status().toString();
    EXPECT_EQ(*sync, 43u);
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, AsyncCalls,
                         ::testing::Values(Path::kLocalAdaptive, Path::kLocalSpin, Path::kNetUring, Path::kNetEmulated),
                         pathName);

// 10% of the datagrams each way dropped, 300 calls with 32 in flight from one thread: every
// result right, and the server ran each call exactly once.
TEST(AsyncLoss, PipelinedCallsUnderLossRunExactlyOnce) {
  Server server;
  Status s = server.start(Path::kNetUring);
  ASSERT_TRUE(s.isOk()) << s.toString();
  ASSERT_TRUE(server.pair()->addLoss(10));
  auto a = server.client().async();
  std::vector<Pending<Result<uint64_t>>> window;
  std::vector<uint64_t> expected;
  size_t ok = 0;
  auto finishOldest = [&] {
    Result<uint64_t> r = window.front().wait();
    if (r.isOk() && *r == expected.front()) ++ok;
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    window.erase(window.begin());
    expected.erase(expected.begin());
  };
  for (uint64_t i = 0; i < 300; ++i) {
    if (window.size() == 32) finishOldest();
    window.push_back(a.echo(i * 3));
    expected.push_back(i * 3);
  }
  while (!window.empty()) finishOldest();
  EXPECT_EQ(ok, 300u);
  Result<uint64_t> ran = server.client().ran();
  ASSERT_TRUE(ran.isOk()) << ran.status().toString();
  EXPECT_EQ(*ran, 300u);
}

}  // namespace
}  // namespace lrpc::asynctest
