// Robustness where the network is not the point (the in-memory loopback, or 127.0.0.1):
// options checked before anything starts, sequence numbers across the 2^32 wrap, a hello
// flood that cannot push out an established session, and handlers that take turns polling.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <thread>

#include "runtime/names.h"
#include "tests/testing/socket_address.h"
#include "tests/transport/test_service.h"
#include "transport/client.h"
#include "transport/loopback.h"
#include "transport/server.h"

namespace lrpc::net {
namespace {

using lrpc::testing::loopbackTo;
using testing::Svc;

struct BadServerOption {
  const char* option;
  std::function<void(ServerOptions&)> set;
};

TEST(Options, EachBadServerOptionIsRefusedByName) {
  const BadServerOption cases[] = {
      {"window", [](ServerOptions& o) { o.window = 0; }},
      {"window", [](ServerOptions& o) { o.window = 1025; }},
      {"maxDatagram", [](ServerOptions& o) { o.maxDatagram = 64; }},
      {"maxDatagram", [](ServerOptions& o) { o.maxDatagram = 70000; }},
      {"maxMessageBytes", [](ServerOptions& o) { o.maxMessageBytes = 0; }},
      {"fragmentWindow", [](ServerOptions& o) { o.fragmentWindow = 0; }},
      {"fragmentWindow", [](ServerOptions& o) { o.fragmentWindow = kAckBits + 1; }},
      {"maxSessions", [](ServerOptions& o) { o.maxSessions = 0; }},
      {"maxHalfOpen", [](ServerOptions& o) { o.maxHalfOpen = 0; }},
      {"workers", [](ServerOptions& o) { o.workers = 0; }},
      {"workers", [](ServerOptions& o) { o.workers = 257; }},
      {"takeoverAfter", [](ServerOptions& o) { o.takeoverAfter = std::chrono::milliseconds(0); }},
      {"receiveBuffers", [](ServerOptions& o) { o.receiveBuffers = 0; }},
      {"spinBeforeBlock", [](ServerOptions& o) { o.spinBeforeBlock = std::chrono::nanoseconds(-1); }},
  };
  for (const auto& c : cases) {
    ServerOptions so;
    so.security.clearText = true;  // only the option under test is wrong
    c.set(so);
    // Through bind() (a socket) and through start() (an endpoint attached by hand).
    UdpServer bound(so);
    Svc::Impl impl;
    ASSERT_TRUE(bound.add("svc", Svc::kDescriptor, &impl).isOk());
    auto port = bound.bind("127.0.0.1:0");
    ASSERT_FALSE(port.isOk()) << c.option;
    EXPECT_EQ(port.status(), Errc::kInvalidArgument) << c.option;
    EXPECT_NE(port.status().detail().find(std::string("ServerOptions::") + c.option), std::string::npos)
        << port.status().detail();
    auto net = std::make_shared<LoopbackNetwork>();
    UdpServer attached(so);
    attached.attach(net->open(7000));
    Status s = attached.start();
    EXPECT_EQ(s, Errc::kInvalidArgument) << c.option;
    EXPECT_NE(s.detail().find(c.option), std::string::npos) << s.detail();
  }
  EXPECT_TRUE(validate(ServerOptions{}).isOk());
}

struct BadClientOption {
  const char* option;
  std::function<void(ClientOptions&)> set;
};

TEST(Options, EachBadClientOptionIsRefusedByName) {
  const BadClientOption cases[] = {
      {"window", [](ClientOptions& o) { o.window = 0; }},
      {"window", [](ClientOptions& o) { o.window = 1025; }},
      {"initialRto", [](ClientOptions& o) { o.initialRto = std::chrono::nanoseconds(0); }},
      {"maxRto", [](ClientOptions& o) { o.maxRto = o.initialRto / 2; }},
      {"connectTimeout", [](ClientOptions& o) { o.connectTimeout = std::chrono::nanoseconds(0); }},
      {"spinBeforeBlock", [](ClientOptions& o) { o.spinBeforeBlock = std::chrono::nanoseconds(-1); }},
      {"maxDatagram", [](ClientOptions& o) { o.maxDatagram = 100; }},
      {"maxDatagram", [](ClientOptions& o) { o.maxDatagram = 65508; }},
      {"maxMessageBytes", [](ClientOptions& o) { o.maxMessageBytes = 0; }},
      {"fragmentWindow", [](ClientOptions& o) { o.fragmentWindow = 0; }},
      {"fragmentWindow", [](ClientOptions& o) { o.fragmentWindow = kAckBits + 1; }},
  };
  // A server that would answer, so that only the options can be the reason.
  auto net = std::make_shared<LoopbackNetwork>();
  Svc::Impl impl;
  UdpServer server;
  ASSERT_TRUE(server.add("svc", Svc::kDescriptor, &impl).isOk());
  server.attach(net->open(7000));
  ASSERT_TRUE(server.start().isOk());
  for (const auto& c : cases) {
    ClientOptions co;
    c.set(co);
    auto viaUri = connect("udp+clear://127.0.0.1:7000/svc", Svc::kDescriptor, co);
    EXPECT_EQ(viaUri.status(), Errc::kInvalidArgument) << c.option;
    EXPECT_NE(viaUri.status().detail().find(std::string("ClientOptions::") + c.option), std::string::npos)
        << viaUri.status().detail();
    auto direct = UdpChannel::open(net->open(), server.address(), "svc", Svc::kDescriptor, co);
    EXPECT_EQ(direct.status(), Errc::kInvalidArgument) << c.option;
    EXPECT_NE(direct.status().detail().find(c.option), std::string::npos) << direct.status().detail();
  }
  EXPECT_EQ(impl.calls.load(), 0u);
  EXPECT_EQ(server.sessionCount(), 0u);
}

// A session that starts a few calls before the 32-bit sequence number wraps, with several
// threads sharing a window smaller than their number, and duplicated and reordered
// datagrams: every call across the wrap returns its own answer and runs exactly once.
TEST(SequenceWrap, CallsAcrossTheWrapRunExactlyOnce) {
  auto net = std::make_shared<LoopbackNetwork>(LoopbackFaults{0.02, 0.2, 0.2, 77});
  Svc::Impl impl;
  UdpServer server;
  ASSERT_TRUE(server.add("svc", Svc::kDescriptor, &impl).isOk());
  server.attach(net->open(7000));
  ASSERT_TRUE(server.start().isOk());
  for (uint32_t window : {1u, 3u, 4u}) {
    ClientOptions co;
    co.initialRto = std::chrono::milliseconds(2);
    co.maxRto = std::chrono::milliseconds(20);
    co.maxRetries = 40;
    co.window = window;
    co.firstSequence = UINT32_MAX - 20;
    auto ch = UdpChannel::open(net->open(), server.address(), "svc", Svc::kDescriptor, co);
    ASSERT_TRUE(ch.isOk()) << ch.status().toString();
    Binding b(Svc::kDescriptor, ch->get(), *ch);
    constexpr int kThreads = 5, kCalls = 12;  // 60 calls: 20 before the wrap, 40 after
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kCalls; ++i) {
          uint64_t token = uint64_t{window} * 100000 + uint64_t(t) * 1000 + i + 1;
          auto r = testing::callToken(b, token);
          if (!r.isOk() || *r != token * 3) failures.fetch_add(1);
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(failures.load(), 0) << "window " << window;
    for (int t = 0; t < kThreads; ++t) {
      for (int i = 0; i < kCalls; ++i) {
        EXPECT_EQ(impl.executions(uint64_t{window} * 100000 + uint64_t(t) * 1000 + i + 1), 1) << "window " << window;
      }
    }
    EXPECT_EQ((*ch)->stats().sessions, 1u);  // the same session all along
  }
}

// A hello for `name` as a client would send it, from a raw socket.
std::vector<std::byte> helloDatagram(uint64_t nonce, std::string_view name) {
  HelloBody body{};
  body.ifaceId = Svc::kDescriptor.id;
  body.signatureHash = Svc::kDescriptor.signatureHash;
  body.window = 32;
  body.maxDatagram = kDefaultMaxDatagram;
  std::string payload;
  EXPECT_TRUE(encodeHello(body, name, Svc::kDescriptor.name, payload).isOk());
  PacketHeader h = makeHeader(PacketType::kHello, 0, nonce, 0);
  h.total = static_cast<uint32_t>(payload.size());
  std::vector<std::byte> d(sizeof h + payload.size());
  std::memcpy(d.data(), &h, sizeof h);
  std::memcpy(d.data() + sizeof h, payload.data(), payload.size());
  return d;
}

class RawSocket {
 public:
  RawSocket() : fd_(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {
    timeval tv{0, 500000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~RawSocket() { ::close(fd_); }
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;
  void sendTo(uint16_t port, std::span<const std::byte> d) {
    sockaddr_in to = loopbackTo(port);
    (void)::sendto(fd_, d.data(), d.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
  }
  std::vector<std::byte> receive() {
    std::vector<std::byte> buf(2048);
    ssize_t n = ::recv(fd_, buf.data(), buf.size(), 0);
    buf.resize(n > 0 ? static_cast<size_t>(n) : 0);
    return buf;
  }

 private:
  int fd_;
};

// Sends hellos from a socket of its own until one is welcomed (each may be dropped).
void waitForWelcome(uint16_t port) {
  RawSocket marker;
  for (uint64_t attempt = 1; attempt <= 20; ++attempt) {
    const uint64_t nonce = 0x3a5e000000000000ull + attempt;
    marker.sendTo(port, helloDatagram(nonce, "svc"));
    for (;;) {
      auto reply = marker.receive();
      if (reply.empty()) break;  // timed out: send another
      auto p = decodePacket(reply);
      if (p.isOk() && p->type() == PacketType::kWelcome && p->header.cookie == nonce) return;
    }
  }
  ADD_FAILURE() << "the server welcomed none of 20 hellos";
}

// 5,000 hellos from one source, each with its own nonce, while a client that made one call
// sits idle: its session stays (no new handshake), and the half-open ones stay bounded.
TEST(HelloFlood, EstablishedSessionSurvivesAndHalfOpenStaysBounded) {
  ServerOptions so;
  so.maxHalfOpen = 256;
  so.security.clearText = true;
  UdpServer server(so);
  Svc::Impl impl;
  ASSERT_TRUE(server.add("svc", Svc::kDescriptor, &impl).isOk());
  auto port = server.bind("127.0.0.1:0");
  ASSERT_TRUE(port.isOk()) << port.status().toString();
  ASSERT_TRUE(server.start().isOk());
  std::string uri = "udp+clear://127.0.0.1:" + std::to_string(*port) + "/svc";
  auto ep = openUdpEndpoint([&] {
    EndpointOptions eo;
    eo.peer = *parseAddress("127.0.0.1:" + std::to_string(*port));
    eo.connect = true;
    return eo;
  }());
  ASSERT_TRUE(ep.isOk());
  auto legit = UdpChannel::open(std::move(*ep), *parseAddress("127.0.0.1:" + std::to_string(*port)), "svc",
                                Svc::kDescriptor);
  ASSERT_TRUE(legit.isOk()) << legit.status().toString();
  Binding b(Svc::kDescriptor, legit->get(), *legit);
  ASSERT_TRUE(testing::callToken(b, 1).isOk());

  RawSocket flood;
  for (uint64_t n = 1; n <= 5000; ++n) {
    flood.sendTo(*port, helloDatagram(0xf100d00000000000ull + n, "svc"));
    if (n % 256 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // let the server keep up
  }
  // The server's socket may drop some of the flood; those it took in come before a hello sent
  // after them, so once that one is welcomed the server has handled the flood.
  waitForWelcome(*port);
  EXPECT_EQ(server.halfOpenCount(), so.maxHalfOpen);
  EXPECT_EQ(server.sessionCount(), so.maxHalfOpen + 1u);  // the half-open ones and the legit one

  auto r = testing::callToken(b, 2);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(*r, 6u);
  EXPECT_EQ((*legit)->stats().sessions, 1u) << "the legit session was evicted and opened again";
  EXPECT_EQ(impl.executions(2), 1);
}

// With the established table full, a flood of half-open sessions pushes out only half-open
// ones: both established clients keep their sessions.
TEST(HelloFlood, HalfOpenNeverEvictsEstablished) {
  ServerOptions so;
  so.maxSessions = 2;
  so.maxHalfOpen = 4;
  so.security.clearText = true;
  UdpServer server(so);
  Svc::Impl impl;
  ASSERT_TRUE(server.add("svc", Svc::kDescriptor, &impl).isOk());
  auto port = server.bind("127.0.0.1:0");
  ASSERT_TRUE(port.isOk());
  ASSERT_TRUE(server.start().isOk());
  std::string uri = "udp+clear://127.0.0.1:" + std::to_string(*port) + "/svc";
  auto a = connect(uri, Svc::kDescriptor);
  auto c = connect(uri, Svc::kDescriptor);
  ASSERT_TRUE(a.isOk() && c.isOk());
  ASSERT_TRUE(testing::callToken(**a, 10).isOk());
  ASSERT_TRUE(testing::callToken(**c, 20).isOk());
  RawSocket flood;
  for (uint64_t n = 1; n <= 100; ++n) flood.sendTo(*port, helloDatagram(0xabc00000ull + n, "svc"));
  waitForWelcome(*port);
  EXPECT_EQ(server.halfOpenCount(), 4u);
  EXPECT_EQ(server.sessionCount(), 6u);
  ASSERT_TRUE(testing::callToken(**a, 11).isOk());
  ASSERT_TRUE(testing::callToken(**c, 21).isOk());
  EXPECT_EQ(server.sessionCount(), 6u);  // no new session for either: neither was evicted
  EXPECT_EQ(impl.executions(11), 1);
  EXPECT_EQ(impl.executions(21), 1);
}

// A peer that skips the client's name check gets the same answer from the server.
TEST(Names, ServerRefusesABadNameAsTheSameHostDoes) {
  ServerOptions so;
  so.security.clearText = true;
  UdpServer server(so);
  Svc::Impl impl;
  ASSERT_TRUE(server.add("svc", Svc::kDescriptor, &impl).isOk());
  EXPECT_EQ(server.add("bad*name", Svc::kDescriptor, &impl), Errc::kInvalidArgument);
  auto port = server.bind("127.0.0.1:0");
  ASSERT_TRUE(port.isOk());
  ASSERT_TRUE(server.start().isOk());
  for (std::string_view name : {std::string_view("bad*name"), std::string_view(".hidden"), std::string_view("nope")}) {
    RawSocket raw;
    raw.sendTo(*port, helloDatagram(42, name));
    auto reply = raw.receive();
    auto p = decodePacket(reply);
    ASSERT_TRUE(p.isOk()) << name;
    ASSERT_EQ(p->type(), PacketType::kWelcome);
    std::string text(reinterpret_cast<const char*>(p->payload.data()), p->payload.size());
    Status local = lrpc::detail::checkName(name);
    if (local.isOk()) {
      EXPECT_EQ(static_cast<Errc>(p->header.status), Errc::kNotFound) << name;
      EXPECT_EQ(text, "no server exports \"nope\"");
    } else {
      EXPECT_EQ(static_cast<Errc>(p->header.status), Errc::kInvalidArgument) << name;
      EXPECT_EQ(text, local.detail());
    }
  }
  EXPECT_EQ(server.sessionCount(), 0u);
}

// With two pool threads, the idle one takes over polling while the other runs a slow
// handler, and another client's calls complete meanwhile.
TEST(Workers, IdlePoolThreadTakesOverFromASlowHandler) {
  auto net = std::make_shared<LoopbackNetwork>();
  Svc::Impl impl;
  ServerOptions so;
  so.workers = 2;
  UdpServer server(so);
  ASSERT_TRUE(server.add("svc", Svc::kDescriptor, &impl).isOk());
  server.attach(net->open(7000));
  ASSERT_TRUE(server.start().isOk());
  ClientOptions co;
  co.mode = ReceiveMode::kBlocking;
  auto slowCh = UdpChannel::open(net->open(), server.address(), "svc", Svc::kDescriptor, co);
  auto fastCh = UdpChannel::open(net->open(), server.address(), "svc", Svc::kDescriptor, co);
  ASSERT_TRUE(slowCh.isOk() && fastCh.isOk());
  Binding slowB(Svc::kDescriptor, slowCh->get(), *slowCh);
  Binding fastB(Svc::kDescriptor, fastCh->get(), *fastCh);
  std::atomic<bool> slowDone{false};
  std::thread slow([&] {
    auto r = testing::callSlowToken(slowB, 1, 1500);
    EXPECT_TRUE(r.isOk()) << r.status().toString();
    slowDone.store(true);
  });
  while (impl.executions(1) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  for (uint64_t t = 2; t < 20; ++t) ASSERT_TRUE(testing::callToken(fastB, t).isOk());
  EXPECT_FALSE(slowDone.load());
  slow.join();
  EXPECT_EQ(impl.executions(1), 1);
}

}  // namespace
}  // namespace lrpc::net
