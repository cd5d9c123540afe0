// transport/gso: which datagrams of a batch one UDP_SEGMENT send may carry, and that what
// arrives over a real socket (with and without UDP_GRO on the receiver) is exactly the
// datagrams that were gathered, in order.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "transport/gso.h"
#include "transport/udp_socket.h"

namespace lrpc::net {
namespace {

OutDatagram datagram(NetAddress to, std::byte* header, size_t headerBytes, std::byte* payload, size_t payloadBytes) {
  return OutDatagram{to, {{header, headerBytes}, {payload, payloadBytes}}, 2};
}

TEST(GsoRun, EqualSizesThenOneShorterAtTheEnd) {
  std::byte h[32] = {}, p[1440] = {};
  NetAddress a{0x0100007f, 9}, b{0x0100007f, 10};
  std::vector<OutDatagram> batch;
  for (int i = 0; i < 5; ++i) batch.push_back(datagram(a, h, 32, p, 1440));
  batch.push_back(datagram(a, h, 32, p, 100));
  batch.push_back(datagram(a, h, 32, p, 1440));
  EXPECT_EQ(gsoRun(batch), 6u);  // the shorter one ends the run
  EXPECT_EQ(gsoRun(std::span(batch).subspan(6)), 1u);
  batch[2].to = b;
  EXPECT_EQ(gsoRun(batch), 2u);  // another peer ends it
  std::vector<OutDatagram> longer = {datagram(a, h, 32, p, 100), datagram(a, h, 32, p, 1440)};
  EXPECT_EQ(gsoRun(longer), 1u);  // a longer one after a shorter one cannot share a send
  EXPECT_EQ(gsoRun({}), 0u);
}

TEST(GsoRun, KernelLimits) {
  std::byte h[32] = {}, p[1440] = {};
  NetAddress a{0x0100007f, 9};
  std::vector<OutDatagram> batch(100, datagram(a, h, 32, p, 1440));
  EXPECT_EQ(gsoRun(batch), kGsoMaxPayload / 1472);  // 44: the 64 KiB IP length, before 64 segments
  std::vector<OutDatagram> small(100, datagram(a, h, 32, p, 100));
  EXPECT_EQ(gsoRun(small), kGsoMaxSegments);
}

class Sockets : public ::testing::Test {
 protected:
  void SetUp() override {
    rx_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    tx_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(rx_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    ASSERT_EQ(::getsockname(rx_, reinterpret_cast<sockaddr*>(&a), &len), 0);
    to_ = fromSockaddr(a);
    timeval tv{5, 0};
    ::setsockopt(rx_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  void TearDown() override {
    ::close(rx_);
    ::close(tx_);
  }

  // Sends 7 datagrams of 32 + 1440 bytes and one of 32 + 500, each header numbered, with GSO.
  std::vector<std::vector<std::byte>> sendRun() {
    std::vector<std::vector<std::byte>> sent;
    static std::byte headers[8][32];
    static std::byte payload[8][1440];
    std::vector<OutDatagram> batch;
    for (int i = 0; i < 8; ++i) {
      std::memset(headers[i], 'A' + i, 32);
      for (size_t k = 0; k < 1440; ++k) payload[i][k] = static_cast<std::byte>(i * 31 + k);
      size_t n = i == 7 ? 500 : 1440;
      batch.push_back(datagram(to_, headers[i], 32, payload[i], n));
      // Sized first, then filled: g++ 12 warns (falsely, -Warray-bounds) on insert() here.
      std::vector<std::byte> whole(32 + n);
      std::memcpy(whole.data(), headers[i], 32);
      std::memcpy(whole.data() + 32, payload[i], n);
      sent.push_back(std::move(whole));
    }
    EXPECT_EQ(gsoRun(batch), 8u);
    GsoMessage m;
    m.build(batch, false);
    ssize_t r = ::sendmsg(tx_, m.msg(), 0);
    if (r < 0 && (errno == EIO || errno == EINVAL)) return {};  // no GSO here: tested as skipped
    EXPECT_EQ(r, static_cast<ssize_t>(7 * 1472 + 532));
    return sent;
  }

  int rx_ = -1, tx_ = -1;
  NetAddress to_;
};

TEST_F(Sockets, SegmentsArriveAsTheGatheredDatagrams) {
  std::vector<std::vector<std::byte>> sent = sendRun();
  if (sent.empty()) GTEST_SKIP() << "UDP_SEGMENT refused by this kernel";
  for (const auto& want : sent) {
    std::byte buf[2048];
    ssize_t n = ::recv(rx_, buf, sizeof buf, 0);
    ASSERT_EQ(n, static_cast<ssize_t>(want.size()));
    EXPECT_EQ(std::memcmp(buf, want.data(), want.size()), 0);
  }
}

TEST_F(Sockets, GroCoalescesAndSplitsBack) {
  if (!enableGro(rx_)) GTEST_SKIP() << "UDP_GRO refused by this kernel";
  std::vector<std::vector<std::byte>> sent = sendRun();
  if (sent.empty()) GTEST_SKIP() << "UDP_SEGMENT refused by this kernel";
  std::vector<std::byte> got;
  std::vector<std::byte> buf(kGroBufferBytes);
  size_t datagrams = 0;
  while (datagrams < sent.size()) {
    Result<GroDatagram> r = receiveGro(rx_, buf, nullptr);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    ASSERT_GT(r->segment, 0u);
    got.insert(got.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(r->bytes));
    datagrams += (r->bytes + r->segment - 1) / r->segment;
  }
  std::vector<std::byte> want;
  for (const auto& d : sent) want.insert(want.end(), d.begin(), d.end());
  EXPECT_EQ(datagrams, sent.size());
  EXPECT_TRUE(got == want);
}

// The io_uring endpoint with UDP_GRO on (and off): a GSO run arrives coalesced in one
// completion (or one recvmsg, when a busy-polling thread reads the socket itself), and the
// sink still sees exactly the datagrams that were gathered, in order.
class GroEndpoint : public Sockets, public ::testing::WithParamInterface<std::tuple<bool, ReceiveMode>> {
 protected:
  bool gro() const { return std::get<0>(GetParam()); }
  ReceiveMode mode() const { return std::get<1>(GetParam()); }
};

TEST_P(GroEndpoint, DeliversEachDatagramOfACoalescedRun) {
  EndpointOptions eo;
  eo.bindAddress = "127.0.0.1:0";
  eo.gro = gro();
  Result<std::unique_ptr<Endpoint>> ep = openUdpEndpoint(eo);
  ASSERT_TRUE(ep.isOk()) << ep.status().toString();
  if (std::string((*ep)->kind()) != "io_uring") GTEST_SKIP() << "io_uring unsupported here";
  to_ = (*ep)->localAddress();
  std::vector<std::vector<std::byte>> sent = sendRun();
  if (sent.empty()) GTEST_SKIP() << "UDP_SEGMENT refused by this kernel";
  struct Collect final : DatagramSink {
    std::vector<std::vector<std::byte>> got;
    void onDatagram(const Datagram& d) noexcept override { got.emplace_back(d.bytes.begin(), d.bytes.end()); }
  } sink;
  for (int tries = 0; tries < 100 && sink.got.size() < sent.size(); ++tries) {
    Result<size_t> r = (*ep)->receive(sink, mode(), std::chrono::milliseconds(50));
    ASSERT_TRUE(r.isOk()) << r.status().toString();
  }
  ASSERT_EQ(sink.got.size(), sent.size());
  for (size_t i = 0; i < sent.size(); ++i) EXPECT_TRUE(sink.got[i] == sent[i]) << "datagram " << i;
}

// A datagram larger than maxDatagram is dropped whole, with GRO on or off (a coalesced run
// carries the segment size; a plain oversized datagram does not fit the geometry).
TEST_P(GroEndpoint, DropsOversizedDatagrams) {
  EndpointOptions eo;
  eo.bindAddress = "127.0.0.1:0";
  eo.gro = gro();
  eo.maxDatagram = 1000;
  Result<std::unique_ptr<Endpoint>> ep = openUdpEndpoint(eo);
  ASSERT_TRUE(ep.isOk()) << ep.status().toString();
  if (std::string((*ep)->kind()) != "io_uring") GTEST_SKIP() << "io_uring unsupported here";
  sockaddr_in a = toSockaddr((*ep)->localAddress());
  std::vector<std::byte> big(1001, std::byte{1}), fits(1000, std::byte{2});
  ASSERT_EQ(::sendto(tx_, big.data(), big.size(), 0, reinterpret_cast<sockaddr*>(&a), sizeof a), 1001);
  ASSERT_EQ(::sendto(tx_, fits.data(), fits.size(), 0, reinterpret_cast<sockaddr*>(&a), sizeof a), 1000);
  struct Collect final : DatagramSink {
    std::vector<size_t> sizes;
    void onDatagram(const Datagram& d) noexcept override { sizes.push_back(d.bytes.size()); }
  } sink;
  for (int tries = 0; tries < 100 && sink.sizes.empty(); ++tries) {
    ASSERT_TRUE((*ep)->receive(sink, mode(), std::chrono::milliseconds(50)).isOk());
  }
  ASSERT_EQ(sink.sizes.size(), 1u);
  EXPECT_EQ(sink.sizes[0], 1000u);
}

INSTANTIATE_TEST_SUITE_P(OnOff, GroEndpoint,
                         ::testing::Combine(::testing::Bool(),
                                            ::testing::Values(ReceiveMode::kBlocking, ReceiveMode::kBusyPoll)),
                         [](const ::testing::TestParamInfo<std::tuple<bool, ReceiveMode>>& p) {
                           return std::string(std::get<0>(p.param) ? "gro" : "plain") +
                                  (std::get<1>(p.param) == ReceiveMode::kBusyPoll ? "_busypoll" : "_blocking");
                         });

}  // namespace
}  // namespace lrpc::net
