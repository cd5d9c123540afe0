// A capability of an interface whose fixed argument part (2 KiB) does not fit in the inline
// argument room of the tunnel procedure: on the same host its calls cannot be written in
// place on the tunnel's A-stack, so they take the capability channel (a message copied into
// the tunnel's tail, runtime/capability.cc, fitsTunnel). The same checks run over UDP, where
// every capability call takes that channel.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <type_traits>

#include "runtime/exporter.h"
#include "runtime/import.h"
#include "tests/integration/exporter_process.h"
#include "tests/integration/harness.h"
#include "tests/transport/net_harness.h"
#include "tests/transport/udp_server_child.h"
#include "transport/client.h"
#include "transport/server.h"
#include "wide.lrpc.h"

namespace lrpc::testing {
namespace {

using net::testing::ForkedServer;

constexpr size_t kValues = 256;
using Values = std::array<int64_t, kValues>;
static_assert(std::is_trivially_copyable_v<wide::Block> && sizeof(wide::Block) == sizeof(Values),
              "Block is its 256 Int64 fields in order");

Values valuesOf(const wide::Block& b) {
  Values v;
  std::memcpy(v.data(), &b, sizeof b);
  return v;
}

wide::Block blockOf(const Values& v) {
  wide::Block b;
  std::memcpy(&b, v.data(), sizeof b);
  return b;
}

class WideImpl final : public wide::Wide::Server {
 public:
  WideImpl(std::shared_ptr<std::atomic<uint32_t>> live, int64_t base) : live_(std::move(live)), base_(base) {
    ++*live_;
  }
  ~WideImpl() override { --*live_; }
  // The test's values are small: no sum here can overflow.
  Result<wide::Wide::SumResults> sum(const wide::Block& block) override {
    const Values v = valuesOf(block);
    return wide::Wide::SumResults{std::accumulate(v.begin(), v.end(), base_), v.front() + base_, v.back() + base_};
  }
  Result<wide::Block> mirror(const wide::Block& block) override {
    Values v = valuesOf(block);
    std::reverse(v.begin(), v.end());
    for (int64_t& x : v) x += base_;
    return blockOf(v);
  }

 private:
  std::shared_ptr<std::atomic<uint32_t>> live_;
  int64_t base_;
};

class WideMakerImpl final : public wide::WideMaker::Server {
 public:
  Result<wide::Wide::Client> make(int64_t base) override {
    return wide::Wide::Client::serve(std::make_shared<WideImpl>(live_, base));
  }
  Result<int64_t> read(const wide::Wide::Client& w) override {
    Values v;
    std::iota(v.begin(), v.end(), int64_t{0});
    Result<wide::Wide::SumResults> r = w.sum(blockOf(v));
    if (!r.isOk()) return r.status();
    return r->total;
  }
  Result<uint32_t> live() override { return live_->load(); }

 private:
  std::shared_ptr<std::atomic<uint32_t>> live_ = std::make_shared<std::atomic<uint32_t>>(0);
};

// Calls on a Wide, passing it back, and its release when dropped.
void checkWide(wide::WideMaker::Client& maker) {
  auto w = maker.make(1000);
  ASSERT_TRUE(w.isOk()) << w.status().toString();
  Values v;
  for (size_t i = 0; i < kValues; ++i) v[i] = static_cast<int64_t>(3 * i + 1);
  auto sum = w->sum(blockOf(v));
  ASSERT_TRUE(sum.isOk()) << sum.status().toString();
  EXPECT_EQ(sum->total, std::accumulate(v.begin(), v.end(), int64_t{1000}));
  EXPECT_EQ(sum->first, 1 + 1000);
  EXPECT_EQ(sum->last, 3 * 255 + 1 + 1000);

  auto mirrored = w->mirror(blockOf(v));
  ASSERT_TRUE(mirrored.isOk()) << mirrored.status().toString();
  const Values back = valuesOf(*mirrored);
  for (size_t i = 0; i < kValues; ++i) {
    ASSERT_EQ(back[i], v[kValues - 1 - i] + 1000) << "value " << i;
  }

  // Passed back, the server calls its own object: 0 + 1 + ... + 255, plus the base.
  auto read = maker.read(*w);
  ASSERT_TRUE(read.isOk()) << read.status().toString();
  EXPECT_EQ(*read, 255 * 256 / 2 + 1000);

  auto live = maker.live();
  ASSERT_TRUE(live.isOk()) << live.status().toString();
  EXPECT_EQ(*live, 1u);
  *w = wide::Wide::Client();  // the client's only reference: released now
  live = maker.live();
  ASSERT_TRUE(live.isOk()) << live.status().toString();
  EXPECT_EQ(*live, 0u);
}

TEST(WideCapability, SameHost) {
  TempDir dir;
  ExporterProcess server(dir.path(), exportOne<wide::WideMaker, WideMakerImpl>("maker"));
  ASSERT_TRUE(server.up());
  ImportOptions io;
  io.dir = dir.path();
  auto maker = lrpc::import<wide::WideMaker>("maker", io);
  ASSERT_TRUE(maker.isOk()) << maker.status().toString();

  // This is the path under test: the Wide is not given the in-place same-host binding.
  {
    auto w = maker->make(0);
    ASSERT_TRUE(w.isOk()) << w.status().toString();
    EXPECT_EQ(w->binding()->local, nullptr) << "a Wide's calls cannot fit the tunnel's inline room";
    EXPECT_NE(w->binding()->channel, nullptr);
  }
  checkWide(*maker);

  // The server dies with a Wide held: its calls fail with a clear error.
  auto w = maker->make(5);
  ASSERT_TRUE(w.isOk()) << w.status().toString();
  server.kill();
  auto sum = w->sum(wide::Block{});
  ASSERT_FALSE(sum.isOk());
  EXPECT_EQ(sum.status().code(), Errc::kPeerDied) << sum.status().toString();
}

uint16_t serveMaker(const std::string& bind) {
  return net::testing::startUdpServer(bind, net::testing::clearTextServer(), [](net::UdpServer& server) {
    return server.add<wide::WideMaker>("maker", *new WideMakerImpl).isOk();
  });
}

TEST(WideCapability, TwoNamespaces) {
  NetnsPair pair;
  ASSERT_TRUE(pair.create().isOk()) << "network namespaces are needed for this test";
  ForkedServer server(pair.nsPath(true), pair.ipA() + ":0", serveMaker);
  ASSERT_NE(server.port(), 0) << "server did not start";
  const std::string uri = "udp+clear://" + pair.ipA() + ":" + std::to_string(server.port()) + "/maker";
  runIn(pair.nsPath(false), [&] {
    auto maker = net::connect<wide::WideMaker>(uri);
    ASSERT_TRUE(maker.isOk()) << maker.status().toString();
    checkWide(*maker);
  });
}

}  // namespace
}  // namespace lrpc::testing
