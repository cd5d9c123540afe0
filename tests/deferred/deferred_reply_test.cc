// Deferred replies through generated stubs, against a server in another process on the same
// host (adaptive and spinning bindings) and across two network namespaces, and in process:
// takers that wait without holding a server thread and are answered by another caller's
// call, answers given before the handler returns, dropped and thrown replies, a large result
// answered from another thread, deferred calls on a capability, a caller that gave up or died
// before the answer, and a server that stopped before it.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "deferred.lrpc.h"
#include "runtime/exporter.h"
#include "runtime/import.h"
#include "tests/deferred/mailbox_impl.h"
#include "tests/integration/harness.h"
#include "tests/testing/service_process.h"
#include "tests/transport/net_harness.h"
#include "transport/client.h"
#include "transport/server.h"

namespace lrpc::deferredtest {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

enum class Path { kInProcess, kLocalAdaptive, kLocalSpin, kNetUring };

bool isNet(Path p) { return p == Path::kNetUring; }

// A clear-text UdpServer of `impl` bound at `bind`, started; its port in *port (null: failed).
std::unique_ptr<net::UdpServer> serveMailbox(MailboxImpl& impl, const std::string& bind, uint16_t* port,
                                             net::ServerOptions so = {}) {
  so.security.clearText = true;
  auto server = std::make_unique<net::UdpServer>(so);
  if (!server->add<Mailbox>("mail", impl).isOk()) return nullptr;
  auto bound = server->bind(bind);
  if (!bound.isOk() || !server->start().isOk()) return nullptr;
  *port = *bound;
  return server;
}

// One worker: a deferred call that held it would stall every other call.
uint16_t serveNet(const std::string& bind) {
  net::ServerOptions so;
  so.workers = 1;
  uint16_t port = 0;
  (void)serveMailbox(*new MailboxImpl, bind, &port, so).release();  // both live as long as the child
  return port;
}

// A Mailbox server on the chosen path, and a client of it.
class Server {
 public:
  Status start(Path path) {
    if (path == Path::kInProcess) {
      client_ = Mailbox::Client::serve(std::make_shared<MailboxImpl>());
      return {};
    }
    if (!isNet(path)) {
      auto b = process_.startLocal(
          [](Exporter& e) { return e.add<Mailbox>("mail", *new MailboxImpl).isOk(); },  // lives as long as the child
          Mailbox::kDescriptor, "mail", path == Path::kLocalSpin ? TransferMode::kSpin : TransferMode::kAdaptive);
      if (!b.isOk()) return b.status();
      client_ = Mailbox::Client(*b);
      return {};
    }
    net::ClientOptions co;
    co.initialRto = std::chrono::milliseconds(10);
    co.security.clearText = true;
    auto c = process_.startNet<Mailbox>(serveNet, "mail", co);
    if (!c.isOk()) return c.status();
    client_ = *c;
    return {};
  }
  Mailbox::Client& client() { return client_; }

 private:
  testing::ServiceProcess process_;
  Mailbox::Client client_;
};

std::string pathName(const ::testing::TestParamInfo<Path>& i) {
  switch (i.param) {
    case Path::kInProcess: return "InProcess";
    case Path::kLocalAdaptive: return "LocalAdaptive";
    case Path::kLocalSpin: return "LocalSpin";
    case Path::kNetUring: return "NetUring";
  }
  return "Unknown";
}

class DeferredReplies : public ::testing::TestWithParam<Path> {
 protected:
  void SetUp() override {
    Status s = server_.start(GetParam());
    ASSERT_TRUE(s.isOk()) << s.toString();
  }
  Mailbox::Client& client() { return server_.client(); }
  // Waits until `count` takers wait on `box` (asked with plain calls, which a held server
  // thread would stall), 20 s at most.
  ::testing::AssertionResult waitForTakers(uint32_t box, uint32_t count) {
    const auto end = Clock::now() + 20s;
    for (;;) {
      auto n = client().waiting(box);
      if (!n.isOk()) return ::testing::AssertionFailure() << n.status().toString();
      if (*n == count) return ::testing::AssertionSuccess();
      if (Clock::now() > end) return ::testing::AssertionFailure() << *n << " takers, not " << count;
      std::this_thread::sleep_for(1ms);
    }
  }

  Server server_;
};

TEST_P(DeferredReplies, TakersWaitWithoutHoldingAThreadAndAPutAnswersThem) {
  // Blocking takers on threads of their own (in process the caller's thread is the handler's).
  constexpr uint32_t kTakers = 8;
  std::vector<Result<std::string>> got(kTakers, Status(Errc::kCancelled));
  std::vector<std::thread> takers;
  for (uint32_t i = 0; i < kTakers; ++i) takers.emplace_back([&, i] { got[i] = client().take(7); });
  ASSERT_TRUE(waitForTakers(7, kTakers));
  auto put = client().put(7, "hello");
  ASSERT_TRUE(put.isOk()) << put.status().toString();
  EXPECT_EQ(put->answered, kTakers);
  for (auto& t : takers) t.join();
  for (auto& r : got) {
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    EXPECT_EQ(*r, "hello");
  }
  // The A-stacks and slots are free again: a second round on the same binding.
  std::thread again([&] { got[0] = client().take(7); });
  ASSERT_TRUE(waitForTakers(7, 1));
  ASSERT_TRUE(client().put(7, "again").isOk());
  again.join();
  ASSERT_TRUE(got[0].isOk()) << got[0].status().toString();
  EXPECT_EQ(*got[0], "again");
}

TEST_P(DeferredReplies, AnAnswerGivenBeforeTheHandlerReturnsArrives) {
  for (uint64_t i = 0; i < 2000; ++i) {
    auto r = client().echo(i * 3);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    ASSERT_EQ(*r, i * 3);
  }
}

TEST_P(DeferredReplies, ADroppedOrThrownReplyFailsTheCallWithWhy) {
  auto dropped = client().drop();
  ASSERT_FALSE(dropped.isOk());
  EXPECT_EQ(dropped.status().code(), Errc::kServerFault);
  EXPECT_NE(dropped.status().detail().find("Mailbox.drop: the handler dropped its reply"), std::string::npos)
      << dropped.status().toString();
  Status thrown = client().fail("out of letters");
  EXPECT_EQ(thrown.code(), Errc::kServerFault);
  EXPECT_NE(thrown.detail().find("out of letters"), std::string::npos) << thrown.toString();
  // The binding goes on.
  auto r = client().echo(5);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(*r, 5u);
}

TEST_P(DeferredReplies, ALargeResultAnsweredFromAnotherThread) {
  for (uint32_t bytes : {0u, 100u, 4000u, 1u << 20}) {
    auto r = client().big(bytes);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    ASSERT_EQ(r->size(), bytes);
    bool right = true;
    for (uint32_t i = 0; i < bytes; ++i) right = right && (*r)[i] == static_cast<uint8_t>(i * 7);
    EXPECT_TRUE(right) << bytes << " bytes";
  }
}

TEST_P(DeferredReplies, DeferredCallsOnACapability) {
  auto child = client().child();
  ASSERT_TRUE(child.isOk()) << child.status().toString();
  Result<std::string> got = Status(Errc::kCancelled);
  std::thread taker([&] { got = child->take(11); });
  ASSERT_TRUE(waitForTakers(11, 1));
  auto put = client().put(11, "via a capability");
  ASSERT_TRUE(put.isOk()) << put.status().toString();
  taker.join();
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  EXPECT_EQ(*got, "via a capability");
  auto echoed = child->echo(9);
  ASSERT_TRUE(echoed.isOk()) << echoed.status().toString();
  EXPECT_EQ(*echoed, 9u);
  auto dropped = child->drop();
  EXPECT_EQ(dropped.status().code(), Errc::kServerFault) << dropped.status().toString();
}

TEST_P(DeferredReplies, AnswersToACallerThatGaveUpGoNowhere) {
  CallOptions quick;
  quick.timeout = 50ms;
  auto late = client().withOptions(quick).take(5);
  ASSERT_FALSE(late.isOk());
  EXPECT_EQ(late.status().code(), Errc::kDeadlineExceeded) << late.status().toString();
  auto put = client().put(5, "too late");
  ASSERT_TRUE(put.isOk()) << put.status().toString();
  EXPECT_EQ(put->answered, 1u);
  // The same host and in process, the caller's giving up is visible before it returns.
  if (!isNet(GetParam())) {
    EXPECT_EQ(put->cancelled, 1u);
  }
  // The binding goes on, on the A-stack that call held.
  Result<std::string> got = Status(Errc::kCancelled);
  std::thread taker([&] { got = client().take(5); });
  ASSERT_TRUE(waitForTakers(5, 1));
  ASSERT_TRUE(client().put(5, "in time").isOk());
  taker.join();
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  EXPECT_EQ(*got, "in time");
}

// Asynchronous calls: in process a call runs its handler on the caller's thread, at once.
class DeferredAcrossProcesses : public DeferredReplies {};

TEST_P(DeferredAcrossProcesses, AsyncTakersFromOneThread) {
  std::vector<Pending<Result<std::string>>> pending;
  for (int i = 0; i < 16; ++i) pending.push_back(client().async().take(3));
  ASSERT_TRUE(waitForTakers(3, 16));
  auto put = client().put(3, "letter");
  ASSERT_TRUE(put.isOk()) << put.status().toString();
  EXPECT_EQ(put->answered, 16u);
  for (auto& p : pending) {
    Result<std::string> r = p.wait();
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    EXPECT_EQ(*r, "letter");
  }
}

TEST_P(DeferredAcrossProcesses, ACancelledTakerIsAnsweredToNobody) {
  auto p = client().async().take(4);
  ASSERT_TRUE(waitForTakers(4, 1));
  p.cancel();
  EXPECT_EQ(p.wait().status().code(), Errc::kCancelled);
  auto put = client().put(4, "nobody");
  ASSERT_TRUE(put.isOk()) << put.status().toString();
  EXPECT_EQ(put->answered, 1u);
  auto r = client().echo(12);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(*r, 12u);
}

TEST_P(DeferredAcrossProcesses, AnObjectHoldingItsOwnReplyIsStillReleased) {
  auto child = client().child();
  ASSERT_TRUE(child.isOk()) << child.status().toString();
  auto held = child->async().hold();
  const auto end = Clock::now() + 20s;
  auto counts = client().counts();
  while (counts.isOk() && counts->held != 1 && Clock::now() < end) counts = client().counts();
  ASSERT_TRUE(counts.isOk()) << counts.status().toString();
  ASSERT_EQ(counts->held, 1u);
  held.cancel();
  // The cancelled call is still unanswered: over UDP its window slot goes to the client's
  // newer calls (more than a window of them), on the same host its A-stack stays held.
  for (int i = 0; i < 100; ++i) {
    auto again = client().counts();
    ASSERT_TRUE(again.isOk()) << i << ": " << again.status().toString();
  }
  held = {};                   // the last reference to the capability but one
  *child = Mailbox::Client();  // the release drops the object, and the Reply it keeps
  while (counts.isOk() && counts->destroyed != 1 && Clock::now() < end) counts = client().counts();
  ASSERT_TRUE(counts.isOk()) << counts.status().toString();
  EXPECT_EQ(counts->destroyed, 1u);
  auto r = client().echo(8);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(*r, 8u);
}

INSTANTIATE_TEST_SUITE_P(Paths, DeferredReplies,
                         ::testing::Values(Path::kInProcess, Path::kLocalAdaptive, Path::kLocalSpin, Path::kNetUring),
                         pathName);
INSTANTIATE_TEST_SUITE_P(Paths, DeferredAcrossProcesses,
                         ::testing::Values(Path::kLocalAdaptive, Path::kLocalSpin, Path::kNetUring), pathName);


// A client of the Mailbox a UdpServer of this test serves on loopback at `port`.
Result<Mailbox::Client> connectLoopback(uint16_t port) {
  net::ClientOptions co;
  co.initialRto = std::chrono::milliseconds(10);
  co.security.clearText = true;
  return net::connect<Mailbox>("udp+clear://127.0.0.1:" + std::to_string(port) + "/mail", co);
}

// In a client child forked before the server exists: waits for the go, then imports "mail".
Result<Mailbox::Client> importOnGo(testing::Pipe& go, const testing::TempDir& dir) {
  char c = 0;
  if (!go.get(&c, 1)) return Status(Errc::kIoError, "no go");
  ImportOptions io;
  io.dir = dir.path();
  auto b = importBinding("mail", Mailbox::kDescriptor, io);
  if (!b.isOk()) return b.status();
  return Mailbox::Client(*b);
}

// In a client child: two takes that wait until the child is killed.
int takeTwoAndWait(Result<Mailbox::Client> mail) {
  if (!mail.isOk()) return 2;
  auto first = mail->async().take(1);
  auto second = mail->async().take(2);
  (void)first.wait();  // until killed
  return 3;
}

// The caller of a deferred call dies, then its server stops, with answers still held: each
// answer then goes nowhere, touching no memory that has gone (ASan). The client is forked
// before the server starts threads, and waits for the go to call.
TEST(DeferredRepliesOutlive, TheirCallerAndTheirServerOnTheSameHost) {
  testing::TempDir dir;
  testing::Pipe go;
  testing::Child client([&] { return takeTwoAndWait(importOnGo(go, dir)); });
  MailboxImpl impl;
  auto exporter = std::make_unique<Exporter>([&] {
    ExporterOptions o;
    o.dir = dir.path();
    return o;
  }());
  ASSERT_TRUE(exporter->add<Mailbox>("mail", impl).isOk());
  go.putByte('g');
  const auto end = Clock::now() + 20s;
  while ((*impl.waiting(1) != 1 || *impl.waiting(2) != 1) && Clock::now() < end) std::this_thread::sleep_for(1ms);
  ASSERT_EQ(*impl.waiting(2), 1u);
  client.kill();
  (void)client.wait();
  while (exporter->stats().bindingsLive != 0 && Clock::now() < end) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(exporter->stats().bindingsLive, 0u);
  EXPECT_EQ(impl.put(1, "to the dead")->answered, 1u);
  exporter.reset();
  EXPECT_EQ(impl.put(2, "after the server")->answered, 1u);
}

TEST(DeferredRepliesOutlive, TheirCallerAndTheirServerOverUdp) {
  testing::Pipe port;
  testing::Child client([&] {
    uint16_t p = 0;
    if (!port.get(&p, sizeof p)) return 1;
    return takeTwoAndWait(connectLoopback(p));
  });
  MailboxImpl impl;
  uint16_t p = 0;
  auto server = serveMailbox(impl, "127.0.0.1:0", &p);
  ASSERT_TRUE(server != nullptr);
  port.put(&p, sizeof p);
  const auto end = Clock::now() + 20s;
  while ((*impl.waiting(1) != 1 || *impl.waiting(2) != 1) && Clock::now() < end) std::this_thread::sleep_for(1ms);
  ASSERT_EQ(*impl.waiting(2), 1u);
  client.kill();
  (void)client.wait();
  EXPECT_EQ(impl.put(1, "to the dead")->answered, 1u);
  server->stop();
  EXPECT_EQ(impl.put(2, "after stop")->answered, 1u);
  server.reset();
}


// Holds a Reply of its own in a capability object, says so on `done`, and stays until killed.
int holdAndStay(Mailbox::Client mail, testing::Pipe& done) {
  auto child = mail.child();
  if (!child.isOk()) return 5;
  auto held = child->async().hold();
  auto counts = mail.counts();
  while (counts.isOk() && counts->held != 1) counts = mail.counts();
  held.cancel();
  done.putByte('d');
  for (;;) ::pause();
}

// A client dies while an object it holds keeps the Reply of one of its calls: the object goes
// with the binding, its Reply answers nobody, and the server goes on.
TEST(DeferredRepliesOutlive, AnObjectKeepingItsCallersReplyGoesWithTheBinding) {
  testing::TempDir dir;
  testing::Pipe go;
  testing::Pipe done;
  testing::Child client([&] {
    auto mail = importOnGo(go, dir);
    return mail.isOk() ? holdAndStay(*mail, done) : 2;
  });
  MailboxImpl impl;
  ExporterOptions o;
  o.dir = dir.path();
  Exporter exporter(o);
  ASSERT_TRUE(exporter.add<Mailbox>("mail", impl).isOk());
  go.putByte('g');
  char c = 0;
  ASSERT_TRUE(done.get(&c, 1));
  client.kill();
  (void)client.wait();
  const auto end = Clock::now() + 20s;
  while (impl.boxes()->destroyed.load() != 1 && Clock::now() < end) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(impl.boxes()->destroyed.load(), 1u);
}

// The same over UDP, where the session ends by eviction (one session at most): its objects
// are destroyed after the server lets its lock go, and a Reply they keep answers nobody.
TEST(DeferredRepliesOutlive, AnObjectKeepingItsCallersReplyGoesWithTheSession) {
  testing::Pipe portPipe;
  testing::Pipe done;
  testing::Child client([&] {
    uint16_t p = 0;
    if (!portPipe.get(&p, sizeof p)) return 1;
    auto mail = connectLoopback(p);
    if (!mail.isOk()) return 2;
    return holdAndStay(*mail, done);
  });
  MailboxImpl impl;
  net::ServerOptions so;
  so.maxSessions = 1;
  uint16_t p = 0;
  auto server = serveMailbox(impl, "127.0.0.1:0", &p, so);
  ASSERT_TRUE(server != nullptr);
  portPipe.put(&p, sizeof p);
  char c = 0;
  ASSERT_TRUE(done.get(&c, 1));
  auto second = connectLoopback(p);
  ASSERT_TRUE(second.isOk()) << second.status().toString();
  auto r = second->echo(4);  // its session evicted the first one's
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(*r, 4u);
  const auto end = Clock::now() + 20s;
  while (impl.boxes()->destroyed.load() != 1 && Clock::now() < end) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(impl.boxes()->destroyed.load(), 1u);
  r = second->echo(5);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
}

}  // namespace
}  // namespace lrpc::deferredtest
