// A hostile client (same uid) that speaks the binding protocol itself, from the documented
// layout (runtime/astack.h, runtime/protocol.h, runtime/astack_format.md): garbage messages,
// out-of-range lengths, offsets and procedures, a forged key, a thread that keeps rewriting
// the A-stack during calls. The server must reject (kBadFrame, kBindingRejected) or complete
// correctly, never crash, and keep serving honest clients.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <sys/un.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "runtime/astack.h"
#include "runtime/exporter.h"
#include "runtime/import.h"
#include "runtime/local_binding.h"
#include "runtime/names.h"
#include "runtime/protocol.h"
#include "runtime/shm.h"
#include "runtime/transfer.h"
#include "tests/integration/raw_client.h"
#include "tests/integration/servers.h"

namespace lrpc::testing {
namespace {

// A binding made by hand. Calls are written field by field, as a hostile client would.
class RawBinding {
 public:
  static std::optional<RawBinding> open(const std::string& dir, const std::string& name) {
    OwnedFd sock = connectToName(dir, name);
    if (!sock.valid()) return std::nullopt;
    const detail::Hello hello = testServiceHello(TransferMode::kBlock);
    if (!detail::sendMessage(sock.get(), &hello, sizeof hello).isOk()) return std::nullopt;
    detail::Welcome w{};
    OwnedFd fd;
    if (!detail::recvMessage(sock.get(), &w, sizeof w, &fd, 5000).isOk() || w.status != 0) return std::nullopt;
    Result<SharedMemory> region = SharedMemory::adopt(std::move(fd), w.regionBytes);
    if (!region.isOk()) return std::nullopt;
    return RawBinding(std::move(sock), std::move(*region), w.key);
  }

  const RegionLayout& layout() const { return layout_; }
  AStackControl* control(uint32_t i) const {
    return reinterpret_cast<AStackControl*>(region_.data() + layout_.astackOffset(i));
  }
  ReturnControl* returnControl(uint32_t i) const {
    return reinterpret_cast<ReturnControl*>(region_.data() + layout_.returnOffset(i));
  }
  std::byte* frame(uint32_t i) const { return reinterpret_cast<std::byte*>(control(i)) + kControlBytes; }
  uint32_t firstAStack(uint32_t procedure) const { return layout_.procedure(procedure).firstAStack; }
  uint64_t key() const { return key_; }
  int socket() const { return sock_.get(); }

  bool start(uint32_t index) {
    detail::Message m{detail::MsgType::kStartThread, index, 0, 0, {}};
    if (!detail::sendMessage(sock_.get(), &m, sizeof m).isOk()) return false;
    detail::Message reply{};
    return detail::recvMessage(sock_.get(), &reply, sizeof reply, nullptr, 5000).isOk() &&
           reply.type == detail::MsgType::kThreadStarted && reply.status == 0;
  }

  // Rings A-stack `index` and waits for the return; the caller filled in the fields.
  // Returns the status byte, or -1 when the server died or did not answer.
  int ring(uint32_t index) {
    AStackControl* ctl = control(index);
    uint32_t seq = ++seq_[index];
    detail::ring(ctl->callWord, ctl->serverSleeping, seq);
    ReturnControl* ret = returnControl(index);
    auto r = detail::waitForReturn(ret->returnWord, ret->clientSleeping, seq, TransferMode::kBlock, sock_.get(),
                                   detail::monotonicNs() + 10'000'000'000);
    if (r != detail::WaitResult::kReady) return -1;
    return detail::loadOnce(returnControl(index)->status);
  }

  // Fills in an honest call header for `procedure` on A-stack `index`.
  void honest(uint32_t index, uint32_t procedure) {
    AStackControl* ctl = control(index);
    ctl->key = key_;
    ctl->procedure = procedure;
    ctl->argTail = 0;
    ctl->argFlags = 0;
  }

 private:
  RawBinding(OwnedFd sock, SharedMemory region, uint64_t key)
      : sock_(std::move(sock)), region_(std::move(region)), key_(key),
        layout_(*RegionLayout::compute(TestService::kDescriptor)), seq_(layout_.astackCount(), 0) {}

  OwnedFd sock_;
  SharedMemory region_;
  uint64_t key_;
  RegionLayout layout_;
  std::vector<uint32_t> seq_;
};

class HostileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.emplace(dir_.path(), "svc");
    ASSERT_TRUE(server_->ok());
  }
  // The server is alive and serves an honest client correctly.
  void expectServerHealthy() {
    ImportOptions o;
    o.dir = dir_.path();
    Result<TestService::Client> c = lrpc::import<TestService>("svc", o);
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    EXPECT_EQ(*c->add(40, 2), 42);
    std::vector<uint8_t> in(3000, 9);
    EXPECT_EQ(*c->echo(in), in);
  }
  TempDir dir_;
  std::optional<TestServer> server_;
};

constexpr int kOk = 0;
constexpr int kBad = static_cast<int>(Errc::kBadFrame);

TEST_F(HostileTest, HonestRawCallWorks) {
  auto b = RawBinding::open(dir_.path(), "svc");
  ASSERT_TRUE(b.has_value());
  uint32_t i = b->firstAStack(TestService::kAdd);
  ASSERT_TRUE(b->start(i));
  b->honest(i, TestService::kAdd);
  TestService::AddArgs a{2, 3};
  std::memcpy(b->frame(i), &a, sizeof a);
  ASSERT_EQ(b->ring(i), kOk);
  TestService::AddResults r;
  std::memcpy(&r, b->frame(i) + b->layout().procedure(TestService::kAdd).resultsOff, sizeof r);
  EXPECT_EQ(r.sum, 5);
}

TEST_F(HostileTest, ForgedKeyIsRejected) {
  auto b = RawBinding::open(dir_.path(), "svc");
  ASSERT_TRUE(b.has_value());
  uint32_t i = b->firstAStack(TestService::kNull);
  ASSERT_TRUE(b->start(i));
  b->honest(i, TestService::kNull);
  b->control(i)->key = b->key() ^ 1;
  EXPECT_EQ(b->ring(i), static_cast<int>(Errc::kBindingRejected));
  b->honest(i, TestService::kNull);
  EXPECT_EQ(b->ring(i), kOk);
  expectServerHealthy();
}

TEST_F(HostileTest, OutOfRangeFieldsAreBadFrames) {
  auto b = RawBinding::open(dir_.path(), "svc");
  ASSERT_TRUE(b.has_value());
  uint32_t e = b->firstAStack(TestService::kEcho);
  ASSERT_TRUE(b->start(e));
  struct Case {
    const char* what;
    uint32_t procedure;
    uint32_t argTail;
    uint8_t argFlags;
  };
  const Case cases[] = {
      {"procedure out of range", 999, 0, 0},
      {"procedure of another A-stack", TestService::kAdd, 0, 0},
      {"procedure UINT32_MAX", UINT32_MAX, 0, 0},
      {"tail beyond the A-stack", TestService::kEcho, 1'000'000, 0},
      {"tail UINT32_MAX", TestService::kEcho, UINT32_MAX, 0},
      {"out-of-band tail without a segment", TestService::kEcho, 10, kTailOutOfBand},
      {"unknown flag bits", TestService::kEcho, 0, 0x80},
  };
  for (const Case& c : cases) {
    b->honest(e, c.procedure);
    b->control(e)->argTail = c.argTail;
    b->control(e)->argFlags = c.argFlags;
    EXPECT_EQ(b->ring(e), kBad) << c.what;
  }
  // A VarRef pointing outside the tail: caught by the generated-style dispatch.
  for (VarRef bad : {VarRef{0, 100}, VarRef{UINT32_MAX, 1}, VarRef{5, UINT32_MAX}}) {
    b->honest(e, TestService::kEcho);
    b->control(e)->argTail = 50;
    std::memcpy(b->frame(e), &bad, sizeof bad);
    EXPECT_EQ(b->ring(e), kBad);
  }
  // An honest echo on the same A-stack still works.
  b->honest(e, TestService::kEcho);
  const ProcedureLayout& pl = b->layout().procedure(TestService::kEcho);
  std::memcpy(b->frame(e) + pl.argTailOff, "hello", 5);
  b->control(e)->argTail = 5;
  VarRef ok{0, 5};
  std::memcpy(b->frame(e), &ok, sizeof ok);
  ASSERT_EQ(b->ring(e), kOk);
  VarRef out;
  std::memcpy(&out, b->frame(e) + pl.resultsOff, sizeof out);
  EXPECT_EQ(out.length, 5u);
  EXPECT_EQ(std::memcmp(b->frame(e) + pl.resultTailOff, "hello", 5), 0);
  expectServerHealthy();
}

TEST_F(HostileTest, OutOfBandLengthBeyondSegmentIsBadFrame) {
  auto b = RawBinding::open(dir_.path(), "svc");
  ASSERT_TRUE(b.has_value());
  uint32_t e = b->firstAStack(TestService::kEcho);
  ASSERT_TRUE(b->start(e));
  detail::Message grow{detail::MsgType::kGrowArgs, e, 10'000, 0, {}};
  ASSERT_TRUE(detail::sendMessage(b->socket(), &grow, sizeof grow).isOk());
  detail::Message reply{};
  OwnedFd fd;
  ASSERT_TRUE(detail::recvMessage(b->socket(), &reply, sizeof reply, &fd, 5000).isOk());
  ASSERT_EQ(reply.status, 0);
  ASSERT_TRUE(fd.valid());
  // The segment is sealed: we cannot shrink it under the server's mapping.
  EXPECT_NE(::ftruncate(fd.get(), 1), 0);
  b->honest(e, TestService::kEcho);
  b->control(e)->argFlags = kTailOutOfBand;
  b->control(e)->argTail = static_cast<uint32_t>(reply.bytes + 1);
  EXPECT_EQ(b->ring(e), kBad);
  // Absurd sizes are refused, not attempted.
  detail::Message huge{detail::MsgType::kGrowArgs, e, uint64_t{1} << 50, 0, {}};
  ASSERT_TRUE(detail::sendMessage(b->socket(), &huge, sizeof huge).isOk());
  ASSERT_TRUE(detail::recvMessage(b->socket(), &reply, sizeof reply, &fd, 5000).isOk());
  EXPECT_EQ(reply.status, static_cast<uint8_t>(Errc::kResourceExhausted));
  expectServerHealthy();
}

// A streamed argument (kTailStreaming): the server copies what argReady says is final, so a
// client that stops writing, lies about argReady, or goes away mid-stream must not hold or
// crash it.
class StreamedArgument : public HostileTest {
 protected:
  static constexpr uint32_t kTail = 1 << 20;
  // Opens a raw binding, gets an argument segment for echo's A-stack and fills in a streamed
  // call of kTail bytes of which `ready` are claimed final. Does not ring.
  void prepare(uint32_t ready) {
    b_ = RawBinding::open(dir_.path(), "svc");
    ASSERT_TRUE(b_.has_value());
    e_ = b_->firstAStack(TestService::kEcho);
    ASSERT_TRUE(b_->start(e_));
    detail::Message grow{detail::MsgType::kGrowArgs, e_, kTail, 0, {}};
    ASSERT_TRUE(detail::sendMessage(b_->socket(), &grow, sizeof grow).isOk());
    detail::Message reply{};
    OwnedFd fd;
    ASSERT_TRUE(detail::recvMessage(b_->socket(), &reply, sizeof reply, &fd, 5000).isOk());
    ASSERT_EQ(reply.status, 0);
    b_->honest(e_, TestService::kEcho);
    const VarRef data{0, kTail};
    std::memcpy(b_->frame(e_), &data, sizeof data);
    AStackControl* ctl = b_->control(e_);
    ctl->argFlags = kTailOutOfBand | kTailStreaming;
    ctl->argTail = kTail;
    ctl->argReady.store(ready, std::memory_order_relaxed);
  }
  std::optional<RawBinding> b_;
  uint32_t e_ = 0;
};

TEST_F(StreamedArgument, StalledStreamEndsTheCallWithBadFrame) {
  prepare(64 * 1024);
  EXPECT_EQ(b_->ring(e_), kBad);  // after the stall limit (1 s), well inside ring()'s 10 s
  expectServerHealthy();
}

TEST_F(StreamedArgument, ReadyBeyondTheTailIsNotTrusted) {
  prepare(0xffffffffu);
  // The whole tail is claimed final (and more): the call completes on exactly kTail bytes.
  EXPECT_EQ(b_->ring(e_), kOk);
  expectServerHealthy();
}

// Threads of the server process now.
size_t threadsOf(pid_t pid) {
  size_t n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return n;
}

TEST_F(StreamedArgument, ClientGoneMidStreamFreesTheServerThread) {
  const size_t before = threadsOf(server_->pid());
  prepare(128 * 1024);
  AStackControl* ctl = b_->control(e_);
  detail::ring(ctl->callWord, ctl->serverSleeping, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the server start waiting
  EXPECT_GT(threadsOf(server_->pid()), before);  // the clerk and the A-stack's server thread
  b_.reset();  // socket closed, region unmapped: the clerk stops the waiting thread
  // The clerk's stop ends the wait (or, on a slow machine, the 1 s stall limit does).
  size_t now = 0;
  for (int i = 0; i < 500 && (now = threadsOf(server_->pid())) > before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(now, before);
  expectServerHealthy();
}

TEST_F(HostileTest, GarbageMessagesEndOnlyThatBinding) {
  {  // Not a Hello at all.
    OwnedFd s = connectToName(dir_.path(), "svc");
    ASSERT_TRUE(s.valid());
    char junk[7] = {1, 2, 3, 4, 5, 6, 7};
    ASSERT_TRUE(detail::sendMessage(s.get(), junk, sizeof junk).isOk());
    detail::Welcome w{};
    Status st = detail::recvMessage(s.get(), &w, sizeof w, nullptr, 5000);
    EXPECT_TRUE(!st.isOk() || w.status != 0);
  }
  {  // A Hello with the wrong magic.
    OwnedFd s = connectToName(dir_.path(), "svc");
    detail::Hello h{};
    h.magic = 0xdeadbeef;
    ASSERT_TRUE(detail::sendMessage(s.get(), &h, sizeof h).isOk());
    detail::Welcome w{};
    ASSERT_TRUE(detail::recvMessage(s.get(), &w, sizeof w, nullptr, 5000).isOk());
    EXPECT_EQ(w.status, static_cast<uint8_t>(Errc::kBindingRejected));
  }
  {  // A request for an A-stack that does not exist, and one with an fd attached.
    auto b = RawBinding::open(dir_.path(), "svc");
    ASSERT_TRUE(b.has_value());
    EXPECT_FALSE(b->start(100'000));
  }
  {
    auto b = RawBinding::open(dir_.path(), "svc");
    ASSERT_TRUE(b.has_value());
    detail::Message m{detail::MsgType::kStartThread, 0, 0, 0, {}};
    ASSERT_TRUE(detail::sendMessage(b->socket(), &m, sizeof m, 0 /* stdin */).isOk());
    detail::Message reply{};
    EXPECT_FALSE(detail::recvMessage(b->socket(), &reply, sizeof reply, nullptr, 5000).isOk());
  }
  {  // A message type nobody knows.
    auto b = RawBinding::open(dir_.path(), "svc");
    ASSERT_TRUE(b.has_value());
    detail::Message m{static_cast<detail::MsgType>(77), 0, 0, 0, {}};
    ASSERT_TRUE(detail::sendMessage(b->socket(), &m, sizeof m).isOk());
    detail::Message reply{};
    EXPECT_FALSE(detail::recvMessage(b->socket(), &reply, sizeof reply, nullptr, 5000).isOk());
  }
  expectServerHealthy();
}

// Sends kCallbacks with `fd` attached and returns the clerk's answer (status 0xFF if none).
uint8_t offerCallbacks(int sock, int fd) {
  detail::Message m{detail::MsgType::kCallbacks, detail::kBindingWide, 0, 0, {}};
  if (!detail::sendMessage(sock, &m, sizeof m, fd).isOk()) return 0xFF;
  detail::Message reply{};
  if (!detail::recvMessage(sock, &reply, sizeof reply, nullptr, 10'000).isOk()) return 0xFF;
  return reply.type == detail::MsgType::kCallbacksReady ? reply.status : 0xFF;
}

// A client whose callback host (runtime/callbacks.h) is not one: the server's clerk imports
// over what it is given with every check of an import, refuses, and the binding goes on.
TEST_F(HostileTest, HostileCallbackHostsAreRefused) {
  auto b = RawBinding::open(dir_.path(), "svc");
  ASSERT_TRUE(b.has_value());
  {  // Not a socket.
    int p[2];
    ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
    OwnedFd r(p[0]), w(p[1]);
    const uint8_t status = offerCallbacks(b->socket(), r.get());
    EXPECT_NE(status, 0);
    EXPECT_NE(status, 0xFF);
  }
  {  // A socket whose other end is already closed.
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    OwnedFd theirs(sv[1]);
    ::close(sv[0]);
    const uint8_t status = offerCallbacks(b->socket(), theirs.get());
    EXPECT_NE(status, 0);
    EXPECT_NE(status, 0xFF);
  }
  {  // A host that answers the Hello with a region of another size.
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    OwnedFd ours(sv[0]), theirs(sv[1]);
    std::thread host([&] {
      detail::Hello hello{};
      if (!detail::recvMessage(ours.get(), &hello, sizeof hello, nullptr, 5000).isOk()) return;
      Result<SharedMemory> shm = SharedMemory::create("hostile-callbacks", 4096);
      if (!shm.isOk()) return;
      detail::Welcome w{};
      w.regionBytes = 4096;
      (void)detail::sendMessage(ours.get(), &w, sizeof w, shm->fd());
      char c;
      (void)::recv(ours.get(), &c, 1, 0);  // until the clerk lets go
    });
    EXPECT_EQ(offerCallbacks(b->socket(), theirs.get()), static_cast<uint8_t>(Errc::kBindingRejected));
    theirs.reset();
    host.join();
  }
  EXPECT_TRUE(b->start(b->firstAStack(0)));  // the binding itself is untouched
  expectServerHealthy();
}

TEST_F(HostileTest, RewritingTheAStackDuringCallsNeverCrashesTheServer) {
  auto b = RawBinding::open(dir_.path(), "svc");
  ASSERT_TRUE(b.has_value());
  uint32_t e = b->firstAStack(TestService::kEcho);
  ASSERT_TRUE(b->start(e));
  const ProcedureLayout& pl = b->layout().procedure(TestService::kEcho);
  std::atomic<bool> stop{false};
  std::thread vandal([&] {
    std::mt19937 rng(12345);
    AStackControl* ctl = b->control(e);
    auto* words = reinterpret_cast<uint32_t*>(b->frame(e));
    // The return block lies inside the frame area; the server writes it and only this test's
    // own ring() reads it, so it is left alone like the doorbells.
    const uint32_t returnFrom = pl.returnOff / 4, returnTo = (pl.returnOff + kControlBytes) / 4;
    while (!stop.load(std::memory_order_relaxed)) {
      // Everything but the doorbells and the return block: key, procedure, lengths, flags, the
      // arguments, the results.
      switch (rng() % 6) {
        case 0: detail::storeOnce(ctl->argTail, static_cast<uint32_t>(rng())); break;
        case 1: detail::storeOnce(ctl->argTail, static_cast<uint32_t>(rng() % 64)); break;
        case 2: detail::storeOnce(ctl->procedure, static_cast<uint32_t>(rng() % 8)); break;
        case 3: detail::storeOnce(ctl->argFlags, static_cast<uint8_t>(rng() % 3)); break;
        case 4: detail::storeOnce(ctl->key, rng() % 4 == 0 ? uint64_t{rng()} : b->key()); break;
        default: {
          uint32_t w = static_cast<uint32_t>(rng() % (pl.frameBytes / 4));
          if (w < returnFrom || w >= returnTo) detail::storeOnce(words[w], static_cast<uint32_t>(rng() % 128));
          break;
        }
      }
    }
  });
  int ok = 0, rejected = 0;
  for (int i = 0; i < 3000; ++i) {
    int st = b->ring(e);
    ASSERT_NE(st, -1) << "the server died or stopped answering";
    ASSERT_TRUE(st == kOk || st == kBad || st == static_cast<int>(Errc::kBindingRejected)) << st;
    (st == kOk ? ok : rejected)++;
  }
  stop.store(true);
  vandal.join();
  EXPECT_GT(ok + rejected, 0);
  expectServerHealthy();
}

// A client that rings an A-stack's doorbell again while the server still runs the call before:
// that call is served after the first has finished, never beside it by another server thread
// helping with it (the two would share the slot's buffers: copy "E"'s, the result's storage).
// sleepMs has one A-stack, and only this test's thread calls it, so two of its handlers at once
// can only be those two calls.
class CountingSleeps final : public TestService::Server {
 public:
  Result<uint32_t> sleepMs(uint32_t ms) override {
    const int now = running.fetch_add(1) + 1;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    entered.fetch_add(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    running.fetch_sub(1);
    return ms;
  }
  std::atomic<int> running{0}, most{0}, entered{0};
};

TEST(EarlyRing, ACallRungBeforeItsPredecessorReturnedWaitsForIt) {
  TempDir dir;
  CountingSleeps impl;
  ExporterOptions eo;
  eo.dir = dir.path();
  Exporter exporter(eo);
  ASSERT_TRUE(exporter.add("svc", TestService::kDescriptor, static_cast<TestService::Server*>(&impl)).isOk());
  ImportOptions o;
  o.dir = dir.path();
  o.mode = TransferMode::kSpin;  // idle server threads spin, and help with other A-stacks' calls
  Result<TestService::Client> c = lrpc::import<TestService>("svc", o);
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  // Server threads on other A-stacks, which help when a call waits.
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c->null().isOk());
    ASSERT_TRUE(c->add(1, 2).isOk());
  }
  ASSERT_TRUE(c->sleepMs(0).isOk());
  LocalBinding* lb = c->binding()->local;
  AStackControl* ctl = lb->control(lb->procedure(TestService::kSleepMs).layout.firstAStack);
  ASSERT_EQ(ctl->callWord.load(), 1u);

  std::thread caller([&] { EXPECT_TRUE(c->sleepMs(300).isOk()); });
  while (impl.running.load() == 0) std::this_thread::yield();
  ctl->callWord.store(3, std::memory_order_release);  // call 3 rung while call 2 runs
  caller.join();
  // Call 3 is served once call 2 has returned.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (impl.entered.load() < 3 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(impl.entered.load(), 3);
  EXPECT_EQ(impl.most.load(), 1) << "two calls of one A-stack ran at once";
  while (impl.running.load() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

}  // namespace
}  // namespace lrpc::testing
