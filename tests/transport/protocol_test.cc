// The whole protocol (handshake, calls, reliability, fragmentation) over the in-memory
// loopback network, with drop/duplicate/reorder injection: no sockets involved.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "tests/transport/test_service.h"
#include "transport/client.h"
#include "transport/loopback.h"
#include "transport/server.h"

namespace lrpc::net {
namespace {

using testing::Svc;

struct Rig {
  std::shared_ptr<LoopbackNetwork> net;
  Svc::Impl impl;
  std::unique_ptr<UdpServer> server;
  NetAddress serverAddr;

  explicit Rig(LoopbackFaults faults = {}, ServerOptions so = {}) : net(std::make_shared<LoopbackNetwork>(faults)) {
    server = std::make_unique<UdpServer>(so);
    EXPECT_TRUE(server->add("svc", Svc::kDescriptor, &impl).isOk());
    auto ep = net->open(7000, so.maxDatagram);
    serverAddr = ep->localAddress();
    server->attach(std::move(ep));
    EXPECT_TRUE(server->start().isOk());
  }

  Result<std::shared_ptr<Binding>> connect(ClientOptions co = {}, std::string_view name = "svc",
                                           const InterfaceDescriptor& iface = Svc::kDescriptor) {
    auto ch = UdpChannel::open(net->open(0, co.maxDatagram), serverAddr, name, iface, co);
    if (!ch) return ch.status();
    CallChannel* raw = ch->get();
    return std::make_shared<Binding>(iface, raw, std::shared_ptr<void>(std::move(*ch)));
  }
};

ClientOptions fastRetry() {
  ClientOptions co;
  co.initialRto = std::chrono::milliseconds(2);
  co.maxRto = std::chrono::milliseconds(20);
  co.maxRetries = 40;
  co.mode = ReceiveMode::kBlocking;
  return co;
}

TEST(Protocol, NullAndAdd) {
  Rig rig;
  auto b = rig.connect();
  ASSERT_TRUE(b.isOk()) << b.status().toString();
  EXPECT_TRUE((*b)->remote);
  EXPECT_TRUE(testing::callNull(**b).isOk());
  auto sum = testing::callAdd(**b, 40, 2);
  ASSERT_TRUE(sum.isOk()) << sum.status().toString();
  EXPECT_EQ(*sum, 42);
  EXPECT_EQ(rig.server->executed(), 2u);
}

TEST(Protocol, BigInOutIsOneDatagramEachWay) {
  Rig rig;
  auto b = rig.connect();
  ASSERT_TRUE(b.isOk());
  uint64_t before = rig.net->sent();
  RemoteCall c(**b, Svc::kBigInOut, {});
  for (int i = 0; i < 200; ++i) c.args()[i] = std::byte(i);
  ASSERT_TRUE(c.invoke().isOk());
  for (int i = 0; i < 200; ++i) EXPECT_EQ(c.results()[i], std::byte(i) ^ std::byte(0x5a));
  EXPECT_EQ(rig.net->sent() - before, 2u);
}

TEST(Protocol, SingleCellFlagOnSmallMessages) {
  Rig rig;
  std::vector<uint8_t> flags;
  std::mutex mu;
  rig.net->setTap([&](NetAddress, NetAddress, std::span<const std::byte> bytes) {
    auto p = decodePacket(bytes);
    std::lock_guard lock(mu);
    if (p && (p->type() == PacketType::kRequest || p->type() == PacketType::kReply)) flags.push_back(p->header.flags);
  });
  auto b = rig.connect();
  ASSERT_TRUE(b.isOk());
  ASSERT_TRUE(testing::callAdd(**b, 1, 2).isOk());
  std::lock_guard lock(mu);
  ASSERT_EQ(flags.size(), 2u);
  EXPECT_EQ(flags[0], kFlagSingleCell);
  EXPECT_EQ(flags[1], kFlagSingleCell);
}

TEST(Protocol, VariableSizeAcrossSizes) {
  Rig rig;
  auto b = rig.connect();
  ASSERT_TRUE(b.isOk());
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{1400}, size_t{1424}, size_t{1425}, size_t{3000},
                   size_t{100000}, size_t{1} << 20}) {
    auto data = testing::pattern(n, static_cast<uint32_t>(n));
    auto r = testing::callEcho(**b, data, 0x33);
    ASSERT_TRUE(r.isOk()) << n << ": " << r.status().toString();
  }
}

TEST(Protocol, HandlerErrorReachesCaller) {
  Rig rig;
  auto b = rig.connect();
  ASSERT_TRUE(b.isOk());
  RemoteCall c(**b, Svc::kFail, {});
  Status s = c.invoke();
  EXPECT_EQ(s, Errc::kApplication);
  EXPECT_EQ(s.detail(), "handler says no");
}

TEST(Protocol, UnknownNameIsNotFound) {
  Rig rig;
  auto b = rig.connect({}, "nope");
  ASSERT_FALSE(b.isOk());
  EXPECT_EQ(b.status(), Errc::kNotFound);
}

TEST(Protocol, InterfaceMismatchNamesBothSides) {
  Rig rig;
  InterfaceDescriptor other = Svc::kDescriptor;
  other.name = "other.capnp:Other";
  other.signatureHash ^= 1;
  auto b = rig.connect({}, "svc", other);
  ASSERT_FALSE(b.isOk());
  EXPECT_EQ(b.status(), Errc::kBindingRejected);
  EXPECT_NE(b.status().detail().find("other.capnp:Other"), std::string::npos) << b.status().detail();
  EXPECT_NE(b.status().detail().find("test_service.h:Svc"), std::string::npos) << b.status().detail();
}

TEST(Protocol, NoServerMeansPeerDiedInBoundedTime) {
  auto net = std::make_shared<LoopbackNetwork>();
  ClientOptions co = fastRetry();
  co.connectTimeout = std::chrono::milliseconds(100);
  auto ch = UdpChannel::open(net->open(), NetAddress{0x0100007f, 9}, "svc", Svc::kDescriptor, co);
  ASSERT_FALSE(ch.isOk());
  EXPECT_EQ(ch.status(), Errc::kPeerDied);
}

TEST(Protocol, ServerGoneMidSessionIsPeerDied) {
  Rig rig;
  ClientOptions co = fastRetry();
  co.maxRetries = 4;
  auto b = rig.connect(co);
  ASSERT_TRUE(b.isOk());
  ASSERT_TRUE(testing::callNull(**b).isOk());
  rig.server.reset();  // its endpoint closes: datagrams vanish
  Status s = testing::callNull(**b);
  EXPECT_EQ(s, Errc::kPeerDied) << s.toString();
}

TEST(Protocol, ServerRestartResetsSession) {
  auto rig = std::make_unique<Rig>();
  auto b = rig->connect(fastRetry());
  ASSERT_TRUE(b.isOk());
  ASSERT_TRUE(testing::callNull(**b).isOk());
  // A new server on the same address knows nothing of the session: it answers kReset.
  rig->server.reset();
  Svc::Impl impl2;
  UdpServer fresh;
  ASSERT_TRUE(fresh.add("svc", Svc::kDescriptor, &impl2).isOk());
  fresh.attach(rig->net->open(7000));
  ASSERT_TRUE(fresh.start().isOk());
  Status s = testing::callNull(**b);
  EXPECT_EQ(s, Errc::kPeerDied) << s.toString();
  EXPECT_EQ(impl2.calls.load(), 0u);
}

TEST(Protocol, DeadlineExceeded) {
  Rig rig;
  auto b = rig.connect(fastRetry());
  ASSERT_TRUE(b.isOk());
  RemoteCall c(**b, Svc::kSlow, CallOptions{std::chrono::milliseconds(20)});
  uint32_t ms = 300;
  std::memcpy(c.args(), &ms, sizeof ms);
  EXPECT_EQ(c.invoke(), Errc::kDeadlineExceeded);
}

TEST(Protocol, SlowHandlerStillAnsweredOnce) {
  Rig rig;
  auto b = rig.connect(fastRetry());
  ASSERT_TRUE(b.isOk());
  RemoteCall c(**b, Svc::kSlow, {});
  uint32_t ms = 100;  // many retransmissions meanwhile: answered from the reply cache
  std::memcpy(c.args(), &ms, sizeof ms);
  EXPECT_TRUE(c.invoke().isOk());
  EXPECT_EQ(rig.server->executed(), 1u);
}

struct FaultCase {
  const char* name;
  LoopbackFaults faults;
};

class ProtocolFaults : public ::testing::TestWithParam<FaultCase> {};

TEST_P(ProtocolFaults, EveryCallCompletesExactlyOnce) {
  Rig rig(GetParam().faults);
  auto b = rig.connect(fastRetry());
  ASSERT_TRUE(b.isOk()) << b.status().toString();
  for (uint64_t t = 1; t <= 150; ++t) {
    auto r = testing::callToken(**b, t);
    ASSERT_TRUE(r.isOk()) << t << ": " << r.status().toString();
    EXPECT_EQ(*r, t * 3);
  }
  for (uint64_t t = 1; t <= 150; ++t) EXPECT_EQ(rig.impl.executions(t), 1) << t;
  // Large messages too: fragments lost, duplicated and reordered, resent selectively.
  for (size_t n : {size_t{5000}, size_t{200000}}) {
    auto data = testing::pattern(n, 7);
    auto r = testing::callEcho(**b, data, 0x11);
    ASSERT_TRUE(r.isOk()) << n << ": " << r.status().toString();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Loopback, ProtocolFaults,
    ::testing::Values(FaultCase{"loss1", {0.01, 0, 0, 11}}, FaultCase{"loss5", {0.05, 0, 0, 12}},
                      FaultCase{"loss20", {0.20, 0, 0, 13}}, FaultCase{"dup", {0, 0.3, 0, 14}},
                      FaultCase{"reorder", {0, 0, 0.3, 15}}, FaultCase{"all", {0.05, 0.1, 0.1, 16}}),
    [](const ::testing::TestParamInfo<FaultCase>& p) { return std::string(p.param.name); });

TEST(ProtocolConcurrency, ManyThreadsShareOneChannel) {
  Rig rig(LoopbackFaults{0.02, 0.02, 0.02, 99});
  ClientOptions co = fastRetry();
  co.window = 4;  // smaller than the thread count: callers must wait for the window
  auto b = rig.connect(co);
  ASSERT_TRUE(b.isOk());
  constexpr int kThreads = 6, kCalls = 60;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        uint64_t token = uint64_t(t) * 1000 + i + 1;
        auto r = testing::callToken(**b, token);
        if (!r.isOk() || *r != token * 3) failures.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kCalls; ++i) EXPECT_EQ(rig.impl.executions(uint64_t(t) * 1000 + i + 1), 1);
}

TEST(ProtocolConcurrency, ManyClientsOneServer) {
  Rig rig(LoopbackFaults{0.02, 0, 0, 5});
  constexpr int kClients = 4;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      auto b = rig.connect(fastRetry());
      if (!b.isOk()) {
        failures.fetch_add(100);
        return;
      }
      for (int i = 0; i < 40; ++i) {
        auto r = testing::callAdd(**b, c, i);
        if (!r.isOk() || *r != c + i) failures.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(Protocol, ReplayedAndSpoofedPacketsNeverExecuteTwice) {
  Rig rig;
  std::vector<std::vector<std::byte>> recorded;
  std::mutex mu;
  rig.net->setTap([&](NetAddress, NetAddress to, std::span<const std::byte> bytes) {
    std::lock_guard lock(mu);
    if (to.port == 7000) recorded.emplace_back(bytes.begin(), bytes.end());
  });
  auto b = rig.connect();
  ASSERT_TRUE(b.isOk());
  for (uint64_t t = 1; t <= 5; ++t) ASSERT_TRUE(testing::callToken(**b, t).isOk());
  rig.net->setTap(nullptr);
  NetAddress client{0x0100007f, 40000};
  std::vector<std::vector<std::byte>> copy;
  {
    std::lock_guard lock(mu);
    copy = recorded;
  }
  for (auto& pkt : copy) {
    rig.net->inject(client, rig.serverAddr, pkt);  // replay from the real client's address
    auto spoofed = pkt;
    spoofed[8] ^= std::byte{1};  // wrong cookie
    rig.net->inject(client, rig.serverAddr, spoofed);
    rig.net->inject(NetAddress{0x0200007f, 1234}, rig.serverAddr, pkt);  // another source
  }
  // A call after the replays proves the server processed them (in order, one thread).
  ASSERT_TRUE(testing::callToken(**b, 6).isOk());
  for (uint64_t t = 1; t <= 6; ++t) EXPECT_EQ(rig.impl.executions(t), 1) << t;
}

// A server that welcomes any client and answers each request with a reply carrying `trailer`
// as its releases (kFlagReleases): what a broken or hostile server can make a client read.
class ReleasingServer {
 public:
  ReleasingServer(LoopbackNetwork& net, std::vector<uint32_t> trailer)
      : endpoint_(net.open(7100)), trailer_(std::move(trailer)), thread_([this] { run(); }) {}
  ~ReleasingServer() {
    stop_ = true;
    thread_.join();
  }
  NetAddress address() const { return endpoint_->localAddress(); }

 private:
  struct Sink final : DatagramSink {
    explicit Sink(ReleasingServer& server) : server_(server) {}
    void onDatagram(const Datagram& d) noexcept override { server_.answer(d); }
    ReleasingServer& server_;
  };
  void run() {
    Sink sink(*this);
    while (!stop_) (void)endpoint_->receive(sink, ReceiveMode::kBlocking, std::chrono::milliseconds(10));
  }
  void answer(const Datagram& d) {
    auto p = decodePacket(d.bytes);
    if (!p) return;
    if (p->type() == PacketType::kHello) {
      PacketHeader h = makeHeader(PacketType::kWelcome, kSession, p->header.cookie, 0);
      WelcomeBody w{};
      w.cookie = kCookie;
      w.window = 1;
      w.maxDatagram = 1472;
      w.procedureCount = Svc::kDescriptor.procedureCount;
      h.total = sizeof w;
      OutDatagram out{d.from, {{&h, sizeof h}, {&w, sizeof w}}, 2};
      (void)endpoint_->send({&out, 1});
    } else if (p->type() == PacketType::kRequest) {
      PacketHeader h = makeHeader(PacketType::kReply, kSession, kCookie, p->header.seq);
      h.procedure = p->header.procedure;
      h.flags = kFlagReleases;
      h.total = static_cast<uint32_t>(trailer_.size() * 4);
      OutDatagram out{d.from, {{&h, sizeof h}, {trailer_.data(), trailer_.size() * 4}}, 2};
      (void)endpoint_->send({&out, 1});
    }
  }
  static constexpr uint32_t kSession = 5;
  static constexpr uint64_t kCookie = 0x5eed;
  std::unique_ptr<Endpoint> endpoint_;
  std::vector<uint32_t> trailer_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A client reads the releases a reply carries only from inside the datagram: a trailer that
// does not fit fails the call as a bad frame; a well-formed one naming objects the client
// never passed (it has no callback host) changes nothing.
TEST(Protocol, RepliesReleaseOnlyWhatTheyCanName) {
  for (const auto& [trailer, want] : std::vector<std::pair<std::vector<uint32_t>, Errc>>{
           {{}, Errc::kBadFrame},
           {{0}, Errc::kBadFrame},
           {{7, 2}, Errc::kBadFrame},
           {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 17}, Errc::kBadFrame},
           {{0xFFFFFFFFu}, Errc::kBadFrame},
           {{7, 9, 2}, Errc::kOk}}) {
    auto net = std::make_shared<LoopbackNetwork>();
    ReleasingServer server(*net, trailer);
    auto ch = UdpChannel::open(net->open(0), server.address(), "svc", Svc::kDescriptor, fastRetry());
    ASSERT_TRUE(ch.isOk()) << ch.status().toString();
    Binding b(Svc::kDescriptor, ch->get(), nullptr);
    EXPECT_EQ(testing::callNull(b).code(), want) << trailer.size() << " words";
    EXPECT_EQ((*ch)->stats().releasesCarried, want == Errc::kOk ? trailer.back() : 0u);
  }
}

}  // namespace
}  // namespace lrpc::net
