// The transport over real UDP sockets on 127.0.0.1, with both endpoints (io_uring and the
// emulated one) and every receive mode. These run wherever network namespaces are refused.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "runtime/base/fd.h"
#include "tests/testing/socket_address.h"
#include "tests/transport/test_service.h"
#include "transport/client.h"
#include "transport/server.h"
#include "transport/uring_endpoint.h"

namespace lrpc::net {
namespace {

using lrpc::testing::loopbackTo;
using testing::Svc;

struct Param {
  bool emulated;
  ReceiveMode mode;
};

std::string paramName(const ::testing::TestParamInfo<Param>& p) {
  std::string s = p.param.emulated ? "emulated_" : "uring_";
  switch (p.param.mode) {
    case ReceiveMode::kBusyPoll: return s + "poll";
    case ReceiveMode::kBlocking: return s + "block";
    case ReceiveMode::kAdaptive: return s + "adaptive";
  }
  return s;
}

// `impl` served as "svc" by `server` on a port of 127.0.0.1 that it picks: that port.
Result<uint16_t> serveOnLoopback(UdpServer& server, Svc::Impl& impl) {
  if (Status s = server.add("svc", Svc::kDescriptor, &impl); !s.isOk()) return s;
  auto port = server.bind("127.0.0.1:0");
  if (!port.isOk()) return port.status();
  if (Status s = server.start(); !s.isOk()) return s;
  return *port;
}

class Udp : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    ServerOptions so;
    so.emulatedEndpoint = GetParam().emulated;
    so.mode = GetParam().mode;
    so.security.clearText = true;
    server_ = std::make_unique<UdpServer>(so);
    auto port = serveOnLoopback(*server_, impl_);
    ASSERT_TRUE(port.isOk()) << port.status().toString();
    port_ = *port;
  }
  ClientOptions clientOptions() const {
    ClientOptions co;
    co.emulatedEndpoint = GetParam().emulated;
    co.mode = GetParam().mode;
    co.initialRto = std::chrono::milliseconds(20);
    return co;
  }
  std::string uri() const { return "udp+clear://127.0.0.1:" + std::to_string(port_) + "/svc"; }

  Svc::Impl impl_;
  std::unique_ptr<UdpServer> server_;
  uint16_t port_ = 0;
};

TEST_P(Udp, EndpointKindAsAsked) {
  if (GetParam().emulated) {
    EXPECT_STREQ(server_->endpointKind(), "emulated");
  } else if (std::string(server_->endpointKind()) != "io_uring") {
    GTEST_SKIP() << "io_uring unsupported here; the emulated endpoint served";
  }
}

TEST_P(Udp, NullAddBigInOut) {
  auto b = connect(uri(), Svc::kDescriptor, clientOptions());
  ASSERT_TRUE(b.isOk()) << b.status().toString();
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(testing::callNull(**b).isOk());
    auto sum = testing::callAdd(**b, i, -2 * i);
    ASSERT_TRUE(sum.isOk()) << sum.status().toString();
    ASSERT_EQ(*sum, -i);
  }
  RemoteCall c(**b, Svc::kBigInOut, {});
  for (int i = 0; i < 200; ++i) c.args()[i] = std::byte(i * 7);
  ASSERT_TRUE(c.invoke().isOk());
  for (int i = 0; i < 200; ++i) ASSERT_EQ(c.results()[i], std::byte(i * 7) ^ std::byte(0x5a));
  EXPECT_EQ(server_->executed(), 401u);
}

TEST_P(Udp, VariableSizes) {
  auto b = connect(uri(), Svc::kDescriptor, clientOptions());
  ASSERT_TRUE(b.isOk()) << b.status().toString();
  for (size_t n : {size_t{0}, size_t{24}, size_t{1440}, size_t{1441}, size_t{70000}, size_t{3} << 20}) {
    auto data = testing::pattern(n, static_cast<uint32_t>(n) + 1);
    auto r = testing::callEcho(**b, data, 0x77);
    ASSERT_TRUE(r.isOk()) << n << ": " << r.status().toString();
  }
}

TEST_P(Udp, ErrorsAndNames) {
  auto b = connect(uri(), Svc::kDescriptor, clientOptions());
  ASSERT_TRUE(b.isOk());
  RemoteCall c(**b, Svc::kFail, {});
  EXPECT_EQ(c.invoke(), Errc::kApplication);
  auto missing = connect("udp+clear://127.0.0.1:" + std::to_string(port_) + "/nope", Svc::kDescriptor, clientOptions());
  EXPECT_EQ(missing.status(), Errc::kNotFound);
  EXPECT_EQ(connect("udp+clear://127.0.0.1/svc", Svc::kDescriptor).status(), Errc::kInvalidArgument);
  EXPECT_EQ(connect("tcp://127.0.0.1:1/svc", Svc::kDescriptor).status(), Errc::kInvalidArgument);
}

// Secure is the default: neither side falls back to clear text without saying so.
TEST(SecureByDefault, NoKeyIsAnErrorThatNamesTheWaysOut) {
  auto client = connect("udp://127.0.0.1:1/svc", Svc::kDescriptor);
  EXPECT_EQ(client.status(), Errc::kInvalidArgument);
  EXPECT_NE(client.status().detail().find("?key="), std::string::npos) << client.status().detail();
  EXPECT_NE(client.status().detail().find("udp+clear://"), std::string::npos) << client.status().detail();
  Svc::Impl impl;
  UdpServer server;
  ASSERT_TRUE(server.add("svc", Svc::kDescriptor, &impl).isOk());
  auto port = server.bind("127.0.0.1:0");
  EXPECT_EQ(port.status(), Errc::kInvalidArgument);
  EXPECT_NE(port.status().detail().find("clearText"), std::string::npos) << port.status().detail();
  EXPECT_NE(port.status().detail().find("keyFile"), std::string::npos) << port.status().detail();
}

// Garbage, truncated, oversized and replayed datagrams from a raw socket: the server
// neither crashes nor runs anything, and keeps serving the real client correctly.
TEST_P(Udp, HostileDatagramsAreDropped) {
  auto b = connect(uri(), Svc::kDescriptor, clientOptions());
  ASSERT_TRUE(b.isOk());
  ASSERT_TRUE(testing::callToken(**b, 1).isOk());
  uint64_t before = server_->executed();
  lrpc::OwnedFd sock(::socket(AF_INET, SOCK_DGRAM, 0));
  ASSERT_TRUE(sock.valid());
  const int fd = sock.get();
  sockaddr_in to = loopbackTo(port_);
  auto sendRaw = [&](const std::vector<std::byte>& d) {
    (void)::sendto(fd, d.data(), d.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
  };
  uint32_t x = 7;
  for (size_t n : {size_t{0}, size_t{1}, size_t{31}, size_t{32}, size_t{64}, size_t{1472}, size_t{1473},
                   size_t{9000}, size_t{65000}}) {
    std::vector<std::byte> d(n);
    for (auto& c : d) c = std::byte((x = x * 1103515245 + 12345) >> 24);
    sendRaw(d);
    if (n >= 32) {  // a plausible header with garbage behind it
      PacketHeader h = makeHeader(PacketType::kRequest, 1, 2, 3);
      h.total = static_cast<uint32_t>(n - 32);
      std::memcpy(d.data(), &h, sizeof h);
      sendRaw(d);
      h.flags = kFlagFragment;
      h.total = 0xffffffffu;
      std::memcpy(d.data(), &h, sizeof h);
      sendRaw(d);
    }
  }
  // The server handled all of that before this call (one socket, in order).
  auto r = testing::callToken(**b, 2);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(*r, 6u);
  EXPECT_EQ(server_->executed(), before + 1);
  EXPECT_EQ(impl_.executions(1), 1);
}

// The connecting thread (which armed the io_uring receive during the handshake) is gone
// before the first call, and callers on four other threads take turns polling: their
// replies arrive whichever thread runs the receive's work in the kernel.
TEST_P(Udp, CallersOnThreadsOtherThanTheConnector) {
  Result<std::shared_ptr<Binding>> b = Status(Errc::kInvalidArgument, "not connected");
  std::thread([&] { b = connect(uri(), Svc::kDescriptor, clientOptions()); }).join();
  ASSERT_TRUE(b.isOk()) << b.status().toString();
  std::atomic<int> wrong{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) {
        auto sum = testing::callAdd(**b, t * 1000 + i, 1);
        if (!sum.isOk() || *sum != t * 1000 + i + 1) wrong.fetch_add(1);
      }
    });
  }
  for (auto& c : callers) c.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(server_->executed(), 400u);
}

INSTANTIATE_TEST_SUITE_P(Loopback, Udp,
                         ::testing::Values(Param{false, ReceiveMode::kBusyPoll}, Param{false, ReceiveMode::kBlocking},
                                           Param{false, ReceiveMode::kAdaptive}, Param{true, ReceiveMode::kBusyPoll},
                                           Param{true, ReceiveMode::kBlocking}, Param{true, ReceiveMode::kAdaptive}),
                         paramName);

TEST(UdpLarge, SixtyFourMebibytesBothWays) {
  for (bool emulated : {false, true}) {
    Svc::Impl impl;
    ServerOptions so;
    so.emulatedEndpoint = emulated;
    so.security.clearText = true;
    UdpServer server(so);
    auto port = serveOnLoopback(server, impl);
    ASSERT_TRUE(port.isOk()) << port.status().toString();
    ClientOptions co;
    co.emulatedEndpoint = emulated;
    // The echo handler touches 64 MiB byte by byte on the server's polling thread, seconds
    // under a sanitizer, while no reply can come: give the retry budget room for that.
    co.maxRetries = 40;
    co.maxRto = std::chrono::seconds(1);
    auto b = connect("udp+clear://127.0.0.1:" + std::to_string(*port) + "/svc", Svc::kDescriptor, co);
    ASSERT_TRUE(b.isOk());
    auto data = testing::pattern(size_t{64} << 20, 3);
    auto r = testing::callEcho(**b, data, 0x42);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
  }
}

// Large requests of changing sizes, with small ones between: the server reuses the last
// large request's buffer for the next one, and every echo still comes back exact (no bytes
// of an earlier, longer request show through).
TEST(UdpLarge, ChangingSizesReuseTheRequestBuffer) {
  Svc::Impl impl;
  ServerOptions so;
  so.security.clearText = true;
  UdpServer server(so);
  auto port = serveOnLoopback(server, impl);
  ASSERT_TRUE(port.isOk()) << port.status().toString();
  auto b = connect("udp+clear://127.0.0.1:" + std::to_string(*port) + "/svc", Svc::kDescriptor);
  ASSERT_TRUE(b.isOk());
  uint32_t seed = 10;
  for (size_t size : {size_t{3} << 20, size_t{1} << 20, (size_t{2} << 20) + 7, size_t{100}, size_t{1} << 20}) {
    auto data = testing::pattern(size, ++seed);
    auto r = testing::callEcho(**b, data, 0x42);
    ASSERT_TRUE(r.isOk()) << size << ": " << r.status().toString();
  }
}

// The endpoints a receive test runs on: the emulated one, the io_uring one reading its
// socket (with and without UDP_GRO), and the io_uring one with its multishot receive.
struct EndpointKind {
  const char* name;
  bool emulated = false;
  bool gro = true;
  bool ringReceive = false;
  // An endpoint of this kind on a free loopback port.
  EndpointOptions options() const {
    EndpointOptions eo;
    eo.bindAddress = "127.0.0.1:0";
    eo.emulated = emulated;
    eo.gro = gro;
    eo.ringReceive = ringReceive;
    return eo;
  }
};
constexpr EndpointKind kEndpointKinds[] = {
    {"emulated", true}, {"io_uring", false}, {"io_uring without GRO", false, false}, {"io_uring ring receive", false, true, true}};

// An endpoint waited on in every mode, in turns: the io_uring one reads the socket itself
// (with ringReceive, while busy-polling until a sleeping wait arms its multishot receive,
// then it busy-polls its completion queue). Each datagram arrives exactly once, an
// oversized one never.
TEST(UdpEndpoint, EveryModeInTurnDeliversEachDatagramOnce) {
  struct Collect final : DatagramSink {
    std::vector<uint32_t> got;
    size_t oversized = 0;
    void onDatagram(const Datagram& d) noexcept override {
      if (d.bytes.size() != sizeof(uint32_t)) {
        ++oversized;
        return;
      }
      uint32_t v;
      std::memcpy(&v, d.bytes.data(), sizeof v);
      got.push_back(v);
    }
  };
  for (const EndpointKind& kind : kEndpointKinds) {
    EndpointOptions eo = kind.options();
    auto ep = openUdpEndpoint(eo);
    ASSERT_TRUE(ep.isOk()) << ep.status().toString();
    lrpc::OwnedFd sock(::socket(AF_INET, SOCK_DGRAM, 0));
    ASSERT_TRUE(sock.valid());
    const int fd = sock.get();
    sockaddr_in to = loopbackTo((*ep)->localAddress().port);
    auto sendRaw = [&](const void* p, size_t n) {
      ASSERT_EQ(::sendto(fd, p, n, 0, reinterpret_cast<sockaddr*>(&to), sizeof to), static_cast<ssize_t>(n));
    };
    std::vector<std::byte> tooBig(eo.maxDatagram + 1);
    Collect sink;
    uint32_t next = 0;
    for (ReceiveMode mode : {ReceiveMode::kBusyPoll, ReceiveMode::kBlocking, ReceiveMode::kBusyPoll,
                             ReceiveMode::kAdaptive, ReceiveMode::kBusyPoll}) {
      uint32_t first = next;
      for (int i = 0; i < 5; ++i, ++next) {
        sendRaw(&next, sizeof next);
        if (i == 2) sendRaw(tooBig.data(), tooBig.size());
      }
      sink.got.clear();
      for (int turn = 0; turn < 200 && sink.got.size() < 5; ++turn) {
        auto n = (*ep)->receive(sink, mode, std::chrono::milliseconds(50));
        ASSERT_TRUE(n.isOk()) << n.status().toString();
      }
      std::sort(sink.got.begin(), sink.got.end());
      ASSERT_EQ(sink.got, (std::vector<uint32_t>{first, first + 1, first + 2, first + 3, first + 4}))
          << kind.name << " endpoint, mode " << static_cast<int>(mode);
    }
    // Nothing comes twice, in any mode.
    sink.got.clear();
    for (ReceiveMode mode : {ReceiveMode::kBusyPoll, ReceiveMode::kBlocking}) {
      auto n = (*ep)->receive(sink, mode, std::chrono::milliseconds(20));
      ASSERT_TRUE(n.isOk());
    }
    EXPECT_TRUE(sink.got.empty());
    EXPECT_EQ(sink.oversized, 0u);
  }
}

// UDP_GRO costs small datagrams a little in the kernel, so the io_uring endpoint turns it on
// only after a few large datagrams in a row and off again after a long run of small ones;
// every datagram arrives intact either way.
TEST(UdpEndpoint, ReceiveOffloadFollowsTheTraffic) {
  struct Collect final : DatagramSink {
    std::vector<std::vector<std::byte>> got;
    void onDatagram(const Datagram& d) noexcept override { got.emplace_back(d.bytes.begin(), d.bytes.end()); }
  };
  EndpointOptions eo;
  eo.bindAddress = "127.0.0.1:0";
  auto opened = UringEndpoint::open(eo);
  ASSERT_TRUE(opened.isOk()) << opened.status().toString();
  auto* ep = static_cast<UringEndpoint*>(opened->get());
  lrpc::OwnedFd sock(::socket(AF_INET, SOCK_DGRAM, 0));
  ASSERT_TRUE(sock.valid());
  const int fd = sock.get();
  sockaddr_in to = loopbackTo(ep->localAddress().port);
  uint32_t next = 0;
  Collect sink;
  // Sends `count` datagrams of `bytes` (each numbered, the rest a pattern of its number) and
  // checks that exactly those arrive.
  auto exchange = [&](int count, size_t bytes) {
    std::vector<std::vector<std::byte>> sent;
    for (int i = 0; i < count; ++i, ++next) {
      std::vector<std::byte> d(bytes, std::byte(next * 7 + 1));
      std::memcpy(d.data(), &next, sizeof next);
      ASSERT_EQ(::sendto(fd, d.data(), d.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to),
                static_cast<ssize_t>(d.size()));
      sent.push_back(std::move(d));
    }
    sink.got.clear();
    for (int turn = 0; turn < 400 && sink.got.size() < sent.size(); ++turn) {
      auto n = ep->receive(sink, ReceiveMode::kBusyPoll, std::chrono::milliseconds(20));
      ASSERT_TRUE(n.isOk()) << n.status().toString();
    }
    ASSERT_EQ(sink.got, sent) << count << " datagrams of " << bytes << " bytes";
  };
  exchange(3, 1400);
  EXPECT_FALSE(ep->groActive()) << "on after three large datagrams";
  exchange(2, 1400);
  EXPECT_TRUE(ep->groActive()) << "still off after five large datagrams in a row";
  exchange(40, 1400);
  EXPECT_TRUE(ep->groActive());
  exchange(100, 8);
  exchange(1, 1400);  // a large one ends the small run
  exchange(255, 8);
  EXPECT_TRUE(ep->groActive()) << "off before 256 small datagrams in a row";
  exchange(1, 8);
  EXPECT_FALSE(ep->groActive()) << "still on after 256 small datagrams in a row";
  exchange(3, 1400);
  EXPECT_FALSE(ep->groActive());
}

// A sleeping receive keeps its timeout whatever the one before it was (the io_uring endpoint
// sets SO_RCVTIMEO only when it changes, in whole jiffies, and sleeps what is left below a
// jiffy in ppoll): it never returns before the timeout, nor long after it; and a datagram
// that arrives while it sleeps wakes it at once.
TEST(UdpEndpoint, SleepingReceiveKeepsItsTimeoutAndWakesForADatagram) {
  using std::chrono::milliseconds;
  struct Count final : DatagramSink {
    std::atomic<size_t> got{0};
    void onDatagram(const Datagram&) noexcept override { got.fetch_add(1); }
  };
  for (const EndpointKind& kind : kEndpointKinds) {
    EndpointOptions eo = kind.options();
    auto ep = openUdpEndpoint(eo);
    ASSERT_TRUE(ep.isOk()) << ep.status().toString();
    Count sink;
    for (ReceiveMode mode : {ReceiveMode::kBlocking, ReceiveMode::kAdaptive}) {
      // Long, short, below any jiffy, long again: each waits its own time.
      for (auto timeout : {std::chrono::nanoseconds(milliseconds(120)), std::chrono::nanoseconds(milliseconds(30)),
                           std::chrono::nanoseconds(std::chrono::microseconds(300)),
                           std::chrono::nanoseconds(milliseconds(45))}) {
        auto start = std::chrono::steady_clock::now();
        auto n = (*ep)->receive(sink, mode, timeout);
        auto took = std::chrono::steady_clock::now() - start;
        ASSERT_TRUE(n.isOk()) << n.status().toString();
        EXPECT_EQ(*n, 0u);
        EXPECT_GE(took, timeout) << kind.name;
        // Generous: a loaded machine may run the thread late, but never a whole long wait late.
        EXPECT_LT(took, timeout + milliseconds(100)) << kind.name;
      }
      // A datagram sent while the receiver sleeps with a long timeout wakes it.
      lrpc::OwnedFd sock(::socket(AF_INET, SOCK_DGRAM, 0));
      ASSERT_TRUE(sock.valid());
      const int fd = sock.get();
      sockaddr_in to = loopbackTo((*ep)->localAddress().port);
      std::thread sender([&] {
        std::this_thread::sleep_for(milliseconds(30));
        uint32_t v = 7;
        (void)::sendto(fd, &v, sizeof v, 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
      });
      auto start = std::chrono::steady_clock::now();
      size_t before = sink.got.load();
      while (sink.got.load() == before && std::chrono::steady_clock::now() - start < std::chrono::seconds(5)) {
        auto n = (*ep)->receive(sink, mode, std::chrono::seconds(5));
        ASSERT_TRUE(n.isOk()) << n.status().toString();
      }
      auto took = std::chrono::steady_clock::now() - start;
      sender.join();
      EXPECT_EQ(sink.got.load(), before + 1) << kind.name;
      EXPECT_LT(took, std::chrono::seconds(2)) << kind.name;
    }
  }
}

// Datagrams gathered from several pieces arrive byte for byte, from a connected endpoint and
// from an unconnected one: a single cell (the io_uring endpoint copies it into one piece
// and sends it with sendto) and the sizes just above a cell (sendmsg from the pieces).
TEST(UdpEndpoint, GatheredDatagramsArriveIntact) {
  lrpc::OwnedFd sock(::socket(AF_INET, SOCK_DGRAM, 0));
  ASSERT_TRUE(sock.valid());
  const int fd = sock.get();
  sockaddr_in at = loopbackTo(0);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&at), sizeof at), 0);
  socklen_t atLen = sizeof at;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&at), &atLen), 0);
  timeval tv{5, 0};
  ASSERT_EQ(::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
  NetAddress peer{at.sin_addr.s_addr, ntohs(at.sin_port)};
  std::vector<std::byte> bytes(200);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = std::byte(i * 13 + 1);
  for (bool emulated : {false, true}) {
    for (bool connected : {false, true}) {
      EndpointOptions eo;
      eo.bindAddress = "127.0.0.1:0";
      eo.emulated = emulated;
      eo.peer = peer;
      eo.connect = connected;
      auto ep = openUdpEndpoint(eo);
      ASSERT_TRUE(ep.isOk()) << ep.status().toString();
      for (size_t n : {size_t{0}, size_t{1}, size_t{33}, size_t{63}, size_t{64}, size_t{65}, size_t{200}}) {
        // Three pieces: a 32-byte "header", then the rest split unevenly.
        size_t head = std::min<size_t>(n, 32), mid = (n - head) / 3;
        OutDatagram d{peer, {}, 3};
        d.iov[0] = {bytes.data(), head};
        d.iov[1] = {bytes.data() + head, mid};
        d.iov[2] = {bytes.data() + head + mid, n - head - mid};
        ASSERT_TRUE((*ep)->send({&d, 1}).isOk());
        std::vector<std::byte> got(512);
        ssize_t r = ::recv(fd, got.data(), got.size(), 0);
        ASSERT_EQ(r, static_cast<ssize_t>(n)) << (emulated ? "emulated" : "io_uring") << " connected " << connected;
        EXPECT_EQ(std::memcmp(got.data(), bytes.data(), n), 0) << n << " bytes";
      }
    }
  }
}

TEST(UdpEnv, NoIoUringEnvForcesEmulated) {
  ::setenv("LRPC_NO_IO_URING", "1", 1);
  EndpointOptions eo;
  eo.bindAddress = "127.0.0.1:0";
  auto ep = openUdpEndpoint(eo);
  ::unsetenv("LRPC_NO_IO_URING");
  ASSERT_TRUE(ep.isOk());
  EXPECT_STREQ((*ep)->kind(), "emulated");
}

// A server in a child process, killed in the middle of a call: the caller gets an error
// in bounded time (port unreachable or retries exhausted), never a hang.
TEST(UdpCrash, ServerKilledMidCall) {
  for (bool emulated : {false, true}) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      Svc::Impl impl;
      ServerOptions so;
      so.emulatedEndpoint = emulated;
      so.security.clearText = true;
      UdpServer server(so);
      (void)server.add("svc", Svc::kDescriptor, &impl);
      auto port = server.bind("127.0.0.1:0");
      uint16_t p = port.isOk() ? *port : 0;
      if (::write(fds[1], &p, sizeof p) != sizeof p || !server.start().isOk()) ::_exit(1);
      for (int i = 0; i < 600; ++i) ::usleep(100000);  // bounded: 60 s at most
      ::_exit(0);
    }
    ::close(fds[1]);
    uint16_t port = 0;
    ASSERT_EQ(::read(fds[0], &port, sizeof port), static_cast<ssize_t>(sizeof port));
    ::close(fds[0]);
    ASSERT_NE(port, 0);
    ClientOptions co;
    co.emulatedEndpoint = emulated;
    co.initialRto = std::chrono::milliseconds(5);
    co.maxRetries = 8;
    auto b = connect("udp+clear://127.0.0.1:" + std::to_string(port) + "/svc", Svc::kDescriptor, co);
    ASSERT_TRUE(b.isOk()) << b.status().toString();
    ASSERT_TRUE(testing::callNull(**b).isOk());
    std::thread killer([pid] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      ::kill(pid, SIGKILL);
    });
    RemoteCall c(**b, Svc::kSlow, {});
    uint32_t ms = 5000;
    std::memcpy(c.args(), &ms, sizeof ms);
    Status s = c.invoke();
    killer.join();
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_EQ(s, Errc::kPeerDied) << s.toString();
    // And the next call fails fast too.
    EXPECT_FALSE(testing::callNull(**b).isOk());
  }
}

}  // namespace
}  // namespace lrpc::net
