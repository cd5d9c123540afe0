// The paper's four calls through the generated Paper stubs over the in-process channel:
// the fixed-size path (no arguments, two ints, a 200-byte struct each way).
#include "paper.lrpc.h"

#include <gtest/gtest.h>

#include "tests/testing/in_process_channel.h"

namespace {

using lrpc::paper::Bytes200;
using lrpc::paper::Paper;

// Not examples/paper/paper_impl.h: it counts Nulls, keeps BigIn's argument and changes both
// ends of BigInOut's, which the tests below check.
class PaperImpl final : public Paper::Server {
 public:
  lrpc::Status null() override {
    ++nulls;
    return {};
  }
  lrpc::Result<int32_t> add(int32_t a, int32_t b) override {
    return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));  // wraps: a peer picks a and b
  }
  lrpc::Status bigIn(const Bytes200& data) override {
    last = data;
    return {};
  }
  lrpc::Result<Bytes200> bigInOut(const Bytes200& data) override {
    Bytes200 out = data;
    out.w0 += 1;
    out.w24 = ~data.w24;
    return out;
  }
  int nulls = 0;
  Bytes200 last{};
};

TEST(PaperStub, DescriptorMatchesTheSchema) {
  EXPECT_EQ(Paper::kDescriptor.procedureCount, 4u);
  EXPECT_STREQ(Paper::kDescriptor.name, "paper.capnp:Paper");
  EXPECT_EQ(Paper::kDescriptor.dispatch, &Paper::Server::dispatch);
  const auto& add = Paper::kProcedures[Paper::kAdd];
  EXPECT_STREQ(add.name, "add");
  EXPECT_EQ(add.ordinal, 1);
  EXPECT_EQ(add.argsSize, 8u);
  EXPECT_EQ(add.resultsSize, 4u);
  EXPECT_EQ(add.align, 4u);
  EXPECT_EQ(add.astackCount, 5u);
  EXPECT_EQ(add.astackBytes, 8u);
  EXPECT_FALSE(add.variable);
  EXPECT_EQ(Paper::kProcedures[Paper::kBigInOut].astackBytes, 200u);
  EXPECT_EQ(Paper::kProcedures[Paper::kNull].argsSize, 0u);
}

TEST(PaperStub, FourCallsRoundTrip) {
  PaperImpl impl;
  auto bound = lrpc::testing::bindInProcess<Paper>(impl);
  Paper::Client client(bound.binding);

  ASSERT_TRUE(client.null().isOk());
  EXPECT_EQ(impl.nulls, 1);

  auto sum = client.add(40, 2);
  ASSERT_TRUE(sum.isOk()) << sum.status().toString();
  EXPECT_EQ(*sum, 42);
  // The frame is the two ints at offsets 0 and 4, nothing else.
  ASSERT_EQ(bound.channel->lastRequest.size(), 8u);
  int32_t b = 0;
  std::memcpy(&b, bound.channel->lastRequest.data() + 4, 4);
  EXPECT_EQ(b, 2);

  Bytes200 data{};
  data.w0 = 7;
  data.w24 = 0x1234;
  ASSERT_TRUE(client.bigIn(data).isOk());
  EXPECT_EQ(impl.last.w24, 0x1234u);

  auto out = client.bigInOut(data);
  ASSERT_TRUE(out.isOk());
  EXPECT_EQ(out->w0, 8u);
  EXPECT_EQ(out->w24, ~uint64_t{0x1234});
}

TEST(PaperStub, UnboundOrForeignBindingIsRejected) {
  Paper::Client unbound;
  EXPECT_EQ(unbound.add(1, 2).status().code(), lrpc::Errc::kBindingRejected);
  EXPECT_EQ(Paper::Client(nullptr).null().code(), lrpc::Errc::kBindingRejected);

  // A binding made for another descriptor (same procedures, different identity).
  static constexpr lrpc::InterfaceDescriptor kOther = {"other.capnp:Other", 1, 2, Paper::kProcedures,
                                                       Paper::kProcedureCount, &Paper::Server::dispatch};
  PaperImpl impl;
  auto channel = std::make_shared<lrpc::testing::InProcessChannel>(static_cast<void*>(
      static_cast<Paper::Server*>(&impl)));
  auto binding = std::make_shared<lrpc::Binding>(kOther, static_cast<lrpc::CallChannel*>(channel.get()), channel);
  Paper::Client wrong(binding);
  auto r = wrong.add(1, 2);
  EXPECT_EQ(r.status().code(), lrpc::Errc::kBindingRejected);
  EXPECT_NE(r.status().detail().find("other.capnp:Other"), std::string::npos) << r.status().detail();
  EXPECT_EQ(channel->calls, 0);
}

}  // namespace
