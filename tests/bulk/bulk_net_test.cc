// Bulk calls between two network namespaces: a 64 MiB echo (argument and result) with its
// content checked, without faults, under 5% and 20% random loss on every datagram into and
// out of the server's namespace (nftables), and with both endpoints given few receive buffers
// and a small fragment window (the receiver's buffers nearly full). Only selective resends
// can finish these in the time allowed: at 20% loss a 64 MiB message (about 45,600
// fragments) resent whole would never arrive intact.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "every_type.lrpc.h"
#include "tests/testing/every_type_impl.h"
#include "tests/testing/pattern.h"
#include "tests/testing/recycling_blobs.h"
#include "tests/transport/net_harness.h"
#include "tests/transport/udp_server_child.h"
#include "transport/client.h"
#include "transport/connect.h"
#include "transport/server.h"

namespace lrpc::net {
namespace {

using lrpc::testing::Everything;
using lrpc::testing::EveryTypeImpl;
using lrpc::testing::NetnsPair;
using lrpc::testing::runIn;

constexpr size_t kBig = size_t{64} << 20;

using lrpc::testing::pattern;

struct Case {
  const char* name;
  int lossPercent;
  bool fewBuffers;
};

// Runs in the forked server: serves `Iface` through an `Impl` as `name` (Everything as
// "every" by default); never returns the objects (the child exits without destructors when
// the parent goes away).
template <class Iface = Everything, class Impl = EveryTypeImpl<Everything::Server>>
uint16_t serveEvery(const std::string& bind, bool fewBuffers, const char* name = "every") {
  ServerOptions so = testing::clearTextServer();
  if (fewBuffers) {
    so.receiveBuffers = 16;
    so.fragmentWindow = 16;
  }
  return testing::startUdpServer(bind, so, [name](UdpServer& server) { return server.add<Iface>(name, *new Impl).isOk(); });
}

class BulkNet : public ::testing::TestWithParam<Case> {};

TEST_P(BulkNet, SixtyFourMiBEchoContentChecked) {
  const Case& c = GetParam();
  NetnsPair pair;
  if (Status s = pair.create(); !s.isOk()) {
    if (s.code() == Errc::kPermissionDenied) GTEST_SKIP() << "network namespaces refused: " << s.detail();
    FAIL() << s.toString();
  }
  if (c.lossPercent > 0) {
    ASSERT_TRUE(pair.addLoss(c.lossPercent)) << "nft loss rule refused";
  }
  bool few = c.fewBuffers;
  testing::ForkedServer server(pair.nsPath(true), pair.ipA() + ":0",
                               [few](const std::string& b) { return serveEvery(b, few); });
  ASSERT_NE(server.port(), 0);
  std::string target = "udp+clear://" + pair.ipA() + ":" + std::to_string(server.port()) + "/every";
  std::vector<uint8_t> big = pattern(kBig, 21);
  runIn(pair.nsPath(false), [&] {
    ConnectOptions co;
    // Under 20% loss each way a round of the window loses fragments every time: the budget
    // of retries without progress must outlast the slowest stretch, never the whole call.
    co.remote.maxRetries = 40;
    co.remote.maxRto = std::chrono::milliseconds(200);
    co.remote.connectTimeout = std::chrono::seconds(20);
    if (c.fewBuffers) {
      co.remote.fragmentWindow = 16;
    }
    Result<Everything::Client> client = lrpc::connect<Everything>(target, co);
    ASSERT_TRUE(client.isOk()) << client.status().toString();
    Result<std::vector<uint8_t>> back = client->data(big);
    ASSERT_TRUE(back.isOk()) << back.status().toString();
    ASSERT_EQ(back->size(), big.size());
    EXPECT_TRUE(*back == big);
    // A small call afterwards on the same session.
    std::vector<uint8_t> small = pattern(3000, 22);
    Result<std::vector<uint8_t>> again = client->data(small);
    ASSERT_TRUE(again.isOk()) << again.status().toString();
    EXPECT_TRUE(*again == small);
  });
}

// Two namespaces for one test (skipped where namespaces are refused).
class BulkNetBuffers : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Status s = pair.create(); !s.isOk()) {
      if (s.code() == Errc::kPermissionDenied) GTEST_SKIP() << "network namespaces refused: " << s.detail();
      FAIL() << s.toString();
    }
  }
  // Forks a clear-text server of `Iface` through an `Impl` (Everything as "every" by
  // default) in one namespace, and runs `body` with a client of it in the other.
  template <class Iface = Everything, class Impl = EveryTypeImpl<Everything::Server>, class Body>
  void withClient(Body body, const ConnectOptions& co = {}, const char* name = "every") {
    testing::ForkedServer server(pair.nsPath(true), pair.ipA() + ":0",
                                 [name](const std::string& b) { return serveEvery<Iface, Impl>(b, false, name); });
    ASSERT_NE(server.port(), 0);
    std::string target = "udp+clear://" + pair.ipA() + ":" + std::to_string(server.port()) + "/" + name;
    runIn(pair.nsPath(false), [&] {
      Result<typename Iface::Client> client = lrpc::connect<Iface>(target, co);
      ASSERT_TRUE(client.isOk()) << client.status().toString();
      body(*client);
    });
  }
  NetnsPair pair;
};

// The client keeps the buffers of finished large calls for the next ones (ClientOptions::
// keepBufferBytes), and the server those of delivered large replies (ServerOptions::
// keepBufferBytes): larger, smaller and odd sizes one after the other, from two threads at
// once, each echo must come back as exactly what was sent, never with an earlier call's bytes.
TEST_F(BulkNetBuffers, KeptBuffersCarryNothingOver) {
  withClient([](Everything::Client& client) {
    auto run = [&](uint32_t seed, std::vector<std::string>* failures) {
      for (size_t n : {size_t{1} << 20, size_t{300'001}, size_t{2} << 20, size_t{70'000}, (size_t{1} << 20) + 3,
                       size_t{100}, size_t{65'536}}) {
        std::vector<uint8_t> in = pattern(n, seed + static_cast<uint32_t>(n));
        Result<std::vector<uint8_t>> back = client.data(in);
        if (!back.isOk()) {
          failures->push_back(std::to_string(n) + ": " + back.status().toString());
        } else if (*back != in) {
          failures->push_back(std::to_string(n) + ": wrong bytes");
        }
      }
    };
    std::vector<std::string> failures1, failures2;
    run(1, &failures1);  // one thread: each call reuses what the last left
    std::thread other([&] { run(2, &failures2); });
    run(3, &failures1);
    other.join();
    EXPECT_TRUE(failures1.empty()) << failures1.front();
    EXPECT_TRUE(failures2.empty()) << failures2.front();
  });
}

// A large argument leaves from the caller's memory (RemoteCall::copyTail borrows it) and a
// large result from the handler's own vector or string (ServerCall::moveResultTail keeps it);
// one value per message, the next large one is copied. Blobs.mixed carries a Text and a Data
// each way, at offsets where fragments straddle the edges of the borrowed or kept range, with
// 5% loss so that resends read those ranges again: every byte must come back as sent.
TEST_F(BulkNetBuffers, BorrowedAndKeptValuesArriveIntact) {
  ASSERT_TRUE(pair.addLoss(5)) << "nft loss rule refused";
  ConnectOptions co;
  co.remote.maxRetries = 40;
  withClient([](Everything::Client& client) {
    struct Sizes {
      size_t text, data;
    };
    for (Sizes z : {Sizes{3, 65'536}, Sizes{65'537, 1'000'001}, Sizes{200'003, 70'001}, Sizes{65'535, 65'535},
                    Sizes{0, 1'440 * 50 + 7}}) {
      std::vector<uint8_t> textBytes = pattern(z.text, 5 + static_cast<uint32_t>(z.text));
      std::string text(z.text, 'x');
      for (size_t i = 0; i < z.text; ++i) text[i] = static_cast<char>('a' + textBytes[i] % 26);
      std::vector<uint8_t> data = pattern(z.data, 9 + static_cast<uint32_t>(z.data));
      auto m = client.mixed(7, text, true, data, 11);
      ASSERT_TRUE(m.isOk()) << z.text << "/" << z.data << ": " << m.status().toString();
      EXPECT_EQ(m->count, 7u + z.text + z.data + 11u);
      EXPECT_TRUE(m->t == text) << z.text << "/" << z.data;
      EXPECT_TRUE(m->d == data) << z.text << "/" << z.data;
      EXPECT_TRUE(m->flag);
    }
  }, co);
}

// Results written into the caller's own storage (lrpc::Into): a large Data result is
// reassembled straight in the caller's vector (CallChannel::callApart), a small one copied
// into it, and a Results struct's Text and Data reuse theirs; each call's exact bytes, and
// once the vector has held the largest, its storage is the one every later result lands in.
TEST_F(BulkNetBuffers, ResultsIntoTheCallersStorageReuseIt) {
  withClient([](Everything::Client& client) {
    std::vector<uint8_t> out = pattern(100, 1);  // stale bytes that must not survive
    const uint8_t* storage = nullptr;
    for (size_t n : {size_t{1} << 20, size_t{300'001}, (size_t{1} << 20) - 7, size_t{0}, size_t{1} << 20, size_t{9}}) {
      const std::vector<uint8_t> sent = pattern(n, 40 + static_cast<uint32_t>(n));
      Status s = client.data(sent, lrpc::into(out));
      ASSERT_TRUE(s.isOk()) << n << ": " << s.toString();
      ASSERT_EQ(out.size(), n);
      EXPECT_TRUE(out == sent) << n;
      if (storage == nullptr) storage = out.data();
      EXPECT_EQ(storage, out.data()) << n << ": the result moved to new storage";
    }
    lrpc::testing::Blobs::MixedResults mixed;
    mixed.t.reserve(100'000);
    mixed.d.reserve(100'000);
    const char* t = mixed.t.data();
    const uint8_t* d = mixed.d.data();
    for (size_t n : {size_t{80'000}, size_t{10}, size_t{99'999}}) {
      const std::string text(n, 'q');
      const std::vector<uint8_t> data = pattern(n, 50);
      ASSERT_TRUE(client.mixed(1, text, false, data, 2, lrpc::into(mixed)).isOk());
      EXPECT_EQ(mixed.count, 3u + 2 * n);
      EXPECT_FALSE(mixed.flag);
      EXPECT_TRUE(mixed.t == text && mixed.d == data) << n;
      EXPECT_EQ(t, mixed.t.data());
      EXPECT_EQ(d, mixed.d.data());
    }
  });
}

// Over the network a handler's large result is sent from its own vector, kept with the reply
// until the client has all of it; then its storage waits for the next handler's
// lrpc::resultBuffer(), empty: each echo exact, larger or smaller.
TEST_F(BulkNetBuffers, AHandlerGetsADeliveredResultsStorageEmpty) {
  using lrpc::testing::Blobs;
  withClient<Blobs, lrpc::testing::RecyclingBlobs>([](Blobs::Client& client) {
    const size_t sizes[] = {size_t{2} << 20, size_t{2} << 20, (size_t{1} << 20) + 3, size_t{2} << 20, 100,
                            size_t{2} << 20};
    for (size_t n : sizes) {
      const std::vector<uint8_t> sent = pattern(n, 70 + static_cast<uint32_t>(n));
      Result<std::vector<uint8_t>> back = client.data(sent);
      ASSERT_TRUE(back.isOk()) << n << ": " << back.status().toString();
      EXPECT_TRUE(*back == sent) << n;
    }
    Result<Blobs::DigestResults> seen = client.digest({});
    ASSERT_TRUE(seen.isOk()) << seen.status().toString();
    EXPECT_EQ(seen->hash, std::size(sizes) - 1) << "calls that found a delivered result's storage";
    EXPECT_EQ(seen->n, 0u) << "calls whose buffer held bytes";
  }, {}, "blobs");
}

INSTANTIATE_TEST_SUITE_P(Faults, BulkNet,
                         ::testing::Values(Case{"clean", 0, false}, Case{"loss5", 5, false}, Case{"loss20", 20, false},
                                           Case{"fewBuffers", 0, true}, Case{"fewBuffersLoss5", 5, true}),
                         [](const ::testing::TestParamInfo<Case>& p) { return std::string(p.param.name); });

}  // namespace
}  // namespace lrpc::net
