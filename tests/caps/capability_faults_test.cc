// Capabilities over a network that drops, duplicates and reorders datagrams (the in-memory
// loopback with faults): every call that makes an object makes exactly one, every call on an
// object runs exactly once, and every release arrives, so nothing is lost or leaked.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "tests/caps/caps_impl.h"
#include "transport/client.h"
#include "transport/loopback.h"
#include "transport/server.h"

namespace lrpc::testing {
namespace {

using net::LoopbackFaults;
using net::LoopbackNetwork;

class CapabilityFaults : public ::testing::TestWithParam<uint64_t> {
 protected:
  void SetUp() override {
    LoopbackFaults faults;
    faults.drop = 0.1;
    faults.duplicate = 0.1;
    faults.reorder = 0.1;
    faults.seed = GetParam();
    net_ = std::make_shared<LoopbackNetwork>(faults);
    server_ = std::make_unique<net::UdpServer>();
    ASSERT_TRUE(server_->add<caps::Factory>("factory", impl_).isOk());
    auto ep = net_->open(7000);
    const net::NetAddress address = ep->localAddress();
    server_->attach(std::move(ep));
    ASSERT_TRUE(server_->start().isOk());
    net::ClientOptions co;
    co.initialRto = std::chrono::milliseconds(2);
    co.maxRto = std::chrono::milliseconds(20);
    co.maxRetries = 40;
    auto channel = net::UdpChannel::open(net_->open(), address, "factory", caps::Factory::kDescriptor, co);
    ASSERT_TRUE(channel.isOk()) << channel.status().toString();
    channel_ = channel->get();
    CallChannel* raw = channel->get();
    factory_ = caps::Factory::Client(
        std::make_shared<Binding>(caps::Factory::kDescriptor, raw, std::shared_ptr<void>(std::move(*channel))));
  }
  void TearDown() override {
    factory_ = caps::Factory::Client();
    if (server_) server_->stop();
  }

  FactoryImpl impl_;
  std::shared_ptr<LoopbackNetwork> net_;
  std::unique_ptr<net::UdpServer> server_;
  caps::Factory::Client factory_;
  net::UdpChannel* channel_ = nullptr;  // factory_'s
};

TEST_P(CapabilityFaults, EveryObjectMadeOnceCalledOnceAndReleased) {
  constexpr int kObjects = 20;
  constexpr int kAdds = 10;
  std::vector<caps::Counter::Client> counters;
  for (int i = 0; i < kObjects; ++i) {
    auto c = factory_.make("c", 100 * i);
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    counters.push_back(std::move(*c));
  }
  // A make run twice (a duplicated or retransmitted request executed again) leaves an extra one.
  ASSERT_EQ(*factory_.live(), uint32_t{kObjects});
  for (int k = 1; k <= kAdds; ++k) {
    for (int i = 0; i < kObjects; ++i) {
      Result<int64_t> sum = counters[static_cast<size_t>(i)].add(1);
      ASSERT_TRUE(sum.isOk()) << sum.status().toString();
      ASSERT_EQ(*sum, 100 * i + k) << "an add ran twice, or not at all";
    }
  }
  // Two objects in one struct result, and one passed back as an argument.
  auto pair = factory_.pair(7, 8);
  ASSERT_TRUE(pair.isOk()) << pair.status().toString();
  EXPECT_EQ(pair->sum, 15);
  EXPECT_EQ(*factory_.read(pair->first), 7);
  EXPECT_EQ(*pair->second.add(2), 10);
  EXPECT_EQ(*factory_.live(), uint32_t{kObjects + 2});
  pair = Status(Errc::kCancelled);
  counters.clear();
  // Each drop is a release round trip, retransmitted like any call until it is answered.
  EXPECT_EQ(*factory_.live(), 0u) << "a release was lost";
  EXPECT_EQ(server_->sessionCount(), 1u);
  EXPECT_GT(channel_->stats().retransmits, 0u) << "the faults never struck";
}

INSTANTIATE_TEST_SUITE_P(Seeds, CapabilityFaults, ::testing::Values(1, 2, 3));

}  // namespace
}  // namespace lrpc::testing
