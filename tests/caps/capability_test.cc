// Capabilities in one process: a Factory served with Client::serve (the in-process path that
// a server's own objects take), forged, stale and mistyped ids, and the table's bound.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "runtime/capability.h"
#include "runtime/cap_table.h"
#include "tests/caps/caps_impl.h"

namespace lrpc::testing {
namespace {

TEST(Capability, InProcessRoundTrip) {
  auto factory = caps::Factory::Client::serve(std::make_shared<FactoryImpl>());
  checkCapabilities(factory);
}

TEST(Capability, SecondBaseInProcess) {
  auto factory = caps::Factory::Client::serve(std::make_shared<FactoryImpl>());
  checkSecondBase(factory);
}

TEST(Capability, InsideValuesInProcess) {
  auto keeper = caps::Keeper::Client::serve(std::make_shared<KeeperImpl>());
  checkNestedCapabilities(keeper);
}

TEST(Capability, ClientObjectsInsideValuesInProcess) {
  auto publisher = caps::Publisher::Client::serve(std::make_shared<PublisherImpl>());
  checkClientObjectsInsideValues(publisher);
}

TEST(Capability, ForgedIdInsideAValueIsABadFrame) {
  auto keeper = caps::Keeper::Client::serve(std::make_shared<KeeperImpl>());
  auto forgedCounter = detail::capFromFrame(*keeper.binding(), 0x12345, caps::Counter::kDescriptor);
  ASSERT_TRUE(forgedCounter.isOk());
  std::vector<Cap<caps::Counter>> list{Cap<caps::Counter>(*forgedCounter)};
  EXPECT_EQ(keeper.sum(list).status().code(), Errc::kBadFrame);
  caps::Holder h;
  h.counter = Cap<caps::Counter>(*forgedCounter);
  EXPECT_EQ(keeper.nested(h).status().code(), Errc::kBadFrame);
}

TEST(Capability, TunnelIsTheLastProcedure) {
  EXPECT_TRUE(caps::Factory::kDescriptor.carriesCaps);
  EXPECT_FALSE(caps::Counter::kDescriptor.carriesCaps);  // its methods pass none
  EXPECT_EQ(caps::Factory::kLrpcCapCall + 1, caps::Factory::kProcedureCount);
  EXPECT_STREQ(caps::Factory::kProcedures[caps::Factory::kLrpcCapCall].name, "lrpc.capCall");
}

// A Counter client for `id` as if the server had returned it through `factory`'s binding.
caps::Counter::Client forged(const caps::Factory::Client& factory, uint32_t id) {
  auto b = detail::capFromFrame(*factory.binding(), id, caps::Counter::kDescriptor);
  EXPECT_TRUE(b.isOk()) << b.status().toString();
  return caps::Counter::Client(b.isOk() ? *b : nullptr);
}

TEST(Capability, ForgedStaleAndMistypedIdsAreBadFrames) {
  auto factory = caps::Factory::Client::serve(std::make_shared<FactoryImpl>());
  for (uint32_t id : {1u, 2u, 0x7FFFFu, 0xFFFFFu, 0x100001u, 0x7FFFFFFFu}) {
    EXPECT_EQ(forged(factory, id).add(1).status().code(), Errc::kBadFrame) << id;
  }
  auto c = factory.make("c", 1);
  ASSERT_TRUE(c.isOk());
  const uint32_t id = c->binding()->channel->importedCap()->id;
  EXPECT_EQ(*forged(factory, id).add(1), 2);  // the real id works
  c = Status(Errc::kCancelled);               // released
  EXPECT_EQ(forged(factory, id).add(1).status().code(), Errc::kBadFrame);  // stale now
  // A slot reused by a new object does not answer to the old id (its generation moved on).
  auto d = factory.make("d", 1);
  ASSERT_TRUE(d.isOk());
  EXPECT_NE(d->binding()->channel->importedCap()->id, id);
  EXPECT_EQ(forged(factory, id).add(1).status().code(), Errc::kBadFrame);
  // The id of a Counter presented as a Factory: refused, not called through the wrong dispatch.
  auto asFactory = detail::capFromFrame(*factory.binding(), d->binding()->channel->importedCap()->id,
                                        caps::Factory::kDescriptor);
  ASSERT_TRUE(asFactory.isOk());
  EXPECT_EQ(caps::Factory::Client(*asFactory).live().status().code(), Errc::kBadFrame);
  // An id the client would host (callbacks) is not something a server sends.
  EXPECT_EQ(detail::capFromFrame(*factory.binding(), kClientHostedCap | 1, caps::Counter::kDescriptor).status().code(),
            Errc::kBadFrame);
}

TEST(Capability, TableIsBounded) {
  CapTable table(3);
  auto obj = std::make_shared<int>(1);
  std::vector<uint32_t> ids;
  for (int i = 0; i < 3; ++i) {
    auto id = table.add({&caps::Counter::kDescriptor, obj});
    ASSERT_TRUE(id.isOk());
    ids.push_back(*id);
  }
  EXPECT_EQ(table.add({&caps::Counter::kDescriptor, obj}).status().code(), Errc::kResourceExhausted);
  ASSERT_TRUE(table.release(ids[1]).isOk());
  EXPECT_EQ(table.release(ids[1]).code(), Errc::kBadFrame);  // twice
  EXPECT_TRUE(table.add({&caps::Counter::kDescriptor, obj}).isOk());
  EXPECT_EQ(table.live(), 3u);
  EXPECT_EQ(table.find(ids[0], caps::Factory::kDescriptor.id).status().code(), Errc::kBadFrame);
  EXPECT_TRUE(table.find(ids[0], caps::Counter::kDescriptor.id).isOk());
}

TEST(Capability, ObjectsGoWithTheTable) {
  auto live = std::make_shared<std::atomic<uint32_t>>(0);
  {
    CapTable table;
    auto counter = std::make_shared<CounterImpl>(live, "x", 0);
    ASSERT_TRUE(table.add({&caps::Counter::kDescriptor, std::shared_ptr<void>(counter, static_cast<caps::Counter::Server*>(counter.get()))}).isOk());
    counter.reset();
    EXPECT_EQ(live->load(), 1u);
  }
  EXPECT_EQ(live->load(), 0u);
}

// The caller's own object passed to an object in the same process: it goes into that object's
// table for the call, and nothing of it stays there afterwards.
TEST(Capability, CallersObjectsPassedInProcess) {
  auto live = std::make_shared<std::atomic<uint32_t>>(0);
  auto factory = caps::Factory::Client::serve(std::make_shared<FactoryImpl>());
  auto mine = caps::Counter::Client::serve(std::make_shared<CounterImpl>(live, "mine", 5));
  EXPECT_EQ(*factory.read(mine), 5);
  auto same = factory.again(mine);
  ASSERT_TRUE(same.isOk()) << same.status().toString();
  EXPECT_EQ(*same->add(1), 6);
  EXPECT_EQ(*mine.add(0), 6);
  mine = caps::Counter::Client();
  EXPECT_EQ(live->load(), 1u);  // `same` holds it
  same = Status(Errc::kCancelled);
  EXPECT_EQ(live->load(), 0u);
}

}  // namespace
}  // namespace lrpc::testing
