// Large results on the same host are streamed (runtime/astack_format.md, "Streaming a large
// result"): the server publishes the return, then copies the value into the result segment a
// chunk at a time while the client copies each chunk out. Here: every size around the
// threshold keeps its bytes and is streamed exactly when it should be; calls that cannot read
// a stream (asynchronous ones) are not streamed; threads streaming at once get their own
// bytes; and a server stopped or killed in the middle of a stream ends the call with a clear
// error (deadline, stall or death), after which the A-stack comes back once the server has
// finished with it.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "every_type.lrpc.h"
#include "runtime/astack.h"
#include "runtime/exporter.h"
#include "runtime/import.h"
#include "runtime/local_binding.h"
#include "runtime/shared_buffer.h"
#include "tests/integration/exporter_process.h"
#include "tests/integration/harness.h"
#include "tests/integration/per_mode.h"
#include "tests/testing/every_type_impl.h"
#include "tests/testing/pattern.h"

namespace lrpc::testing {
namespace {

using Clock = std::chrono::steady_clock;

ExporterOptions bigTails() {
  ExporterOptions o;
  o.maxOutOfBandBytes = uint64_t{64} << 20;
  return o;
}

// The return blocks of the A-stacks of Everything.data (two: $Lrpc.astacks(2)).
std::vector<ReturnControl*> dataReturns(LocalBinding& lb) {
  const ProcedureLayout& pl = lb.procedure(Everything::kData).layout;
  std::vector<ReturnControl*> r;
  for (uint32_t i = pl.firstAStack; i < pl.firstAStack + pl.count; ++i) r.push_back(lb.returnControl(i));
  return r;
}

bool streamed(const ReturnControl* r) {
  return detail::loadOnce(r->resultFlags) == (kTailOutOfBand | kTailStreaming);
}

// Whether A-stack `i` shows a stream under way: its call's return published (the return
// doorbell holds the call's number: a server stopped before it rang would leave a caller
// without a deadline waiting for the return, as it should), and not all of it counted yet.
bool midStream(LocalBinding& lb, uint32_t i) {
  ReturnControl* r = lb.returnControl(i);
  // Acquire, both: the call's number first, so that the return's flags read after are its own.
  const uint32_t call = lb.control(i)->callWord.load(std::memory_order_acquire);
  if (call == 0 || r->returnWord.load(std::memory_order_acquire) != call) return false;
  return streamed(r) && r->resultReady.load(std::memory_order_acquire) < detail::loadOnce(r->resultTail);
}

class StreamedResult : public PerModeTest {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ExporterProcess>(
        dir_.path(), exportOne<Everything, EveryTypeImpl<Everything::Server>>("every"), bigTails());
    ASSERT_TRUE(server_->up());
    Result<Everything::Client> c = lrpc::import<Everything>("every", opts());
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    client_ = std::make_unique<Everything::Client>(std::move(*c));
    lb_ = client_->binding()->local;
    ASSERT_NE(lb_, nullptr);
  }
  void TearDown() override {
    if (server_ && stopped_) ::kill(server_->pid(), SIGCONT);
  }

  // Clears the result flags this client sees, so that the next return's flags are its own
  // (the server writes them on every return).
  void forgetFlags() {
    for (ReturnControl* r : dataReturns(*lb_)) detail::storeOnce(r->resultFlags, uint8_t{0});
  }
  bool anyStreamed() {
    for (ReturnControl* r : dataReturns(*lb_)) {
      if (streamed(r)) return true;
    }
    return false;
  }
  void stopServer() {
    ASSERT_EQ(::kill(server_->pid(), SIGSTOP), 0);
    stopped_ = true;
  }
  void continueServer() {
    ASSERT_EQ(::kill(server_->pid(), SIGCONT), 0);
    stopped_ = false;
  }

  // Runs an echo of `bytes` with `options` on a thread and stops the server once a stream of it
  // is under way, then runs `whileStopped` (the server still stopped). Returns the call's status,
  // or kCancelled if the call ended before a stream was seen (the server is then not stopped).
  template <class WhileStopped>
  Status stopMidStream(size_t bytes, const CallOptions& options, WhileStopped whileStopped) {
    const std::vector<uint8_t> sent = pattern(bytes, 3);
    Everything::Client c = client_->withOptions(options);
    Status result = Status(Errc::kCancelled, "not run");
    std::atomic<bool> done{false};
    std::thread t([&] {
      Result<std::vector<uint8_t>> back = c.data(sent);
      result = back.status();
      if (back.isOk() && *back != sent) result = Status(Errc::kBadFrame, "the echo came back different");
      done.store(true);
    });
    const ProcedureLayout& pl = lb_->procedure(Everything::kData).layout;
    bool caught = false;
    while (!caught && !done.load()) {
      for (uint32_t i = pl.firstAStack; i < pl.firstAStack + pl.count; ++i) caught = caught || midStream(*lb_, i);
    }
    if (caught) {
      stopServer();
      whileStopped();
    }
    t.join();
    return caught ? result : Status(Errc::kCancelled, "the call ended before its stream was seen: " + result.toString());
  }

  std::unique_ptr<ExporterProcess> server_;
  std::unique_ptr<Everything::Client> client_;
  LocalBinding* lb_ = nullptr;
  bool stopped_ = false;
};

TEST_P(StreamedResult, EverySizeAroundTheThresholdKeepsItsBytes) {
  const size_t sizes[] = {kStreamBytes - 1, kStreamBytes, kStreamBytes + 1, kStreamBytes + kStreamChunk + 7,
                          (size_t{3} << 20) + 5, size_t{64} << 20, 1000};
  std::vector<uint8_t> out = pattern(77, 1);  // stale bytes that must not survive
  uint32_t seed = 40;
  for (size_t n : sizes) {
    const std::vector<uint8_t> sent = pattern(n, ++seed);
    forgetFlags();
    Status s = client_->data(sent, lrpc::into(out));
    ASSERT_TRUE(s.isOk()) << n << ": " << s.toString();
    ASSERT_EQ(out.size(), n);
    EXPECT_TRUE(out == sent) << n;
    // A tail of n bytes (the value at offset 0) is streamed from kStreamBytes on.
    EXPECT_EQ(anyStreamed(), n >= kStreamBytes) << n;
    // And by value, as the plain call returns it.
    Result<std::vector<uint8_t>> back = client_->data(sent);
    ASSERT_TRUE(back.isOk()) << n << ": " << back.status().toString();
    EXPECT_TRUE(*back == sent) << n;
  }
}

// An asynchronous call reads its results after it completes, with no chance to wait for the
// rest of a stream: it does not allow one, and gets its bytes whole.
TEST_P(StreamedResult, AnAsynchronousCallIsNotStreamed) {
  const std::vector<uint8_t> sent = pattern(size_t{2} << 20, 9);
  forgetFlags();
  Result<std::vector<uint8_t>> back = client_->async().data(sent).wait();
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_TRUE(*back == sent);
  EXPECT_FALSE(anyStreamed());
}

// Threads calling at once, on both A-stacks of the procedure and more threads than A-stacks:
// each gets exactly its own bytes back.
TEST_P(StreamedResult, ThreadsStreamingAtOnceGetTheirOwnBytes) {
  constexpr int kThreads = 4;
  constexpr int kCalls = 6;
  std::vector<std::thread> threads;
  std::vector<std::string> failures(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<uint8_t> out;
      for (int i = 0; i < kCalls; ++i) {
        const size_t n = (size_t{1} << 20) + static_cast<size_t>(t) * 100'003 + static_cast<size_t>(i) * 7;
        const std::vector<uint8_t> sent = pattern(n, static_cast<uint32_t>(100 * t + i + 1));
        if (Status s = client_->data(sent, lrpc::into(out)); !s.isOk()) {
          failures[t] = "call " + std::to_string(i) + ": " + s.toString();
          return;
        }
        if (out != sent) {
          failures[t] = "call " + std::to_string(i) + " came back with other bytes";
          return;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
}

// The server stops in the middle of a stream and the call's deadline passes: the call ends with
// kDeadlineExceeded. Its A-stack is the procedure's last free one (the other is held), so the
// next call can only run once that A-stack has come back, which it does when the server,
// continued, has finished with the tail.
TEST_P(StreamedResult, DeadlineWhileTheServerIsStoppedMidStream) {
  Result<SharedBuffer> held = SharedBuffer::allocate(*client_->binding(), Everything::kData, 1 << 20);
  ASSERT_TRUE(held.isOk()) << held.status().toString();
  // The deadline must pass before the stall (1 s) does; a slow build may reach it before the
  // stream starts, or finish the stream before the stop lands: then again, a few times at most.
  Status s;
  for (int attempt = 0; attempt < 5; ++attempt) {
    s = stopMidStream(size_t{32} << 20, CallOptions{std::chrono::milliseconds(600)}, [] {});
    if (stopped_) break;
  }
  EXPECT_EQ(s.code(), Errc::kDeadlineExceeded) << s.toString();
  if (stopped_) continueServer();
  const std::vector<uint8_t> sent = pattern((size_t{1} << 20) + 3, 21);
  Result<std::vector<uint8_t>> back = client_->data(sent);
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_TRUE(*back == sent);
}

// The same with no deadline: a server that stops writing for kStreamStallNs ends the call with
// kBadFrame instead of holding the caller forever.
TEST_P(StreamedResult, AServerThatStopsWritingEndsTheCall) {
  Result<SharedBuffer> held = SharedBuffer::allocate(*client_->binding(), Everything::kData, 1 << 20);
  ASSERT_TRUE(held.isOk()) << held.status().toString();
  const Clock::time_point start = Clock::now();
  Status s = stopMidStream(size_t{64} << 20, CallOptions{}, [] {});
  EXPECT_EQ(s.code(), Errc::kBadFrame) << s.toString();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(20));
  if (stopped_) continueServer();
  const std::vector<uint8_t> sent = pattern(size_t{1} << 20, 22);
  Result<std::vector<uint8_t>> back = client_->data(sent);
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_TRUE(*back == sent);
}

// Killed in the middle of a stream: kPeerDied, never a hang or a value with bytes missing.
TEST_P(StreamedResult, AServerKilledMidStreamEndsTheCallWithPeerDied) {
  const Clock::time_point start = Clock::now();
  Status s = stopMidStream(size_t{64} << 20, CallOptions{}, [this] {
    server_->kill();
    stopped_ = false;
  });
  EXPECT_EQ(s.code(), Errc::kPeerDied) << s.toString();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(20));
  EXPECT_EQ(client_->data(pattern(10, 1)).status().code(), Errc::kPeerDied);
}

INSTANTIATE_TEST_SUITE_P(Modes, StreamedResult, ::testing::ValuesIn(kTransferModes), modeTestName);

}  // namespace
}  // namespace lrpc::testing
