// No stale memory crosses the boundary: the padding inside a struct value (whatever the
// sender's memory held there) goes out as zeros, from the client's arguments and from a
// handler's results, for struct values and lists of structs. (The frame's own gaps, which only
// a reused A-stack holds stale, are zeroed by code the golden test pins.)
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "every_type.lrpc.h"
#include "tests/testing/in_process_channel.h"

namespace lrpc::testing {
namespace {

constexpr int kDirt = 0xCC;

// Outer has padding (after `a`, inside Inner, after `flag`, ...). The dirty one is the same
// value built over kDirt bytes, as a stack or heap slot that held something else would be.
Outer makeOuter(int seed, int fill) {
  Outer o;
  std::memset(static_cast<void*>(&o), fill, sizeof o);
  o.a = static_cast<uint8_t>(seed);
  o.inner.flag = true;
  o.inner.mood = Mood::kAngry;
  o.inner.small = static_cast<int8_t>(-seed);
  o.big = 2.5 * seed;
  o.point = base::Point{seed, -seed};
  o.flag = false;
  o.nested.v = static_cast<uint16_t>(seed);
  o.color = base::Color::kBlue;
  return o;
}

std::vector<std::byte> bytesOf(const Outer& o) {
  std::vector<std::byte> b(sizeof o);
  std::memcpy(b.data(), &o, sizeof o);
  return b;
}

// Handlers that answer with dirty values.
class DirtyScalars final : public Scalars::Server {
 public:
  Result<bool> echoBool(bool v) override { return v; }
  Result<Scalars::AllIntsResults> allInts(int8_t a, int16_t b, int32_t c, int64_t d, uint8_t e, uint16_t f, uint32_t g,
                                          uint64_t h) override {
    return Scalars::AllIntsResults{a, b, c, d, e, f, g, h};
  }
  Result<Scalars::FloatsResults> floats(float f, double d) override { return Scalars::FloatsResults{f, d}; }
  Result<Scalars::EnumsResults> enums(Mood m, base::Color c) override { return Scalars::EnumsResults{m, c}; }
  Result<Outer> outer(const Outer& o) override { return makeOuter(o.a, kDirt); }
  Status nothing() override { return {}; }
  Status fail(uint32_t) override { return {}; }
};

class DirtyLists final : public Lists::Server {
 public:
  Result<std::vector<int32_t>> ints(std::span<const int32_t> v) override { return std::vector<int32_t>(v.begin(), v.end()); }
  Result<std::vector<bool>> bools(std::span<const bool> v) override { return std::vector<bool>(v.begin(), v.end()); }
  Result<std::vector<Mood>> moods(std::span<const Mood> v) override { return std::vector<Mood>(v.begin(), v.end()); }
  Result<std::vector<Outer>> structs(std::span<const Outer> v) override {
    std::vector<Outer> out;
    for (const Outer& o : v) out.push_back(makeOuter(o.a, kDirt));
    return out;
  }
  Result<std::vector<std::string>> texts(std::span<const std::string_view>) override { return std::vector<std::string>{}; }
  Result<std::vector<std::vector<uint8_t>>> datas(std::span<const std::span<const uint8_t>>) override {
    return std::vector<std::vector<uint8_t>>{};
  }
  Result<std::vector<uint64_t>> u64s(std::span<const uint64_t> v) override {
    return std::vector<uint64_t>(v.begin(), v.end());
  }
  Result<uint32_t> limitedTexts(std::span<const std::string_view> v) override { return static_cast<uint32_t>(v.size()); }
};

TEST(Padding, StructArgumentAndResultGoOutWithZeroedPadding) {
  DirtyScalars server;
  auto bound = bindInProcess<Scalars>(server);
  std::vector<std::byte> reply;
  bound.channel->tamperReply = [&](MessageBuffer& r) { reply.assign(r.data(), r.data() + r.size()); };
  Scalars::Client client(bound.binding);
  const Outer dirty = makeOuter(5, kDirt);
  auto r = client.outer(dirty);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->big, 12.5);
  const auto clean = bytesOf(makeOuter(5, 0));
  const auto& req = bound.channel->lastRequest;
  ASSERT_EQ(req.size(), sizeof(Outer));
  EXPECT_EQ(req, clean) << "the argument's padding left the client";
  EXPECT_EQ(reply, clean) << "the handler's result padding left the server";
}

TEST(Padding, ListsOfStructsGoOutWithZeroedPadding) {
  DirtyLists server;
  auto bound = bindInProcess<Lists>(server);
  std::vector<std::byte> reply;
  bound.channel->tamperReply = [&](MessageBuffer& r) { reply.assign(r.data(), r.data() + r.size()); };
  Lists::Client client(bound.binding);
  const std::vector<Outer> dirty{makeOuter(1, kDirt), makeOuter(2, kDirt), makeOuter(3, kDirt)};
  auto r = client.structs(dirty);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[2].nested.v, 3);
  std::vector<std::byte> clean;
  for (int i = 1; i <= 3; ++i) {
    auto b = bytesOf(makeOuter(i, 0));
    clean.insert(clean.end(), b.begin(), b.end());
  }
  const size_t fixed = Lists::kDescriptor.procedures[Lists::kStructs].argsSize;
  const auto& req = bound.channel->lastRequest;
  ASSERT_EQ(req.size(), fixed + clean.size());
  EXPECT_TRUE(std::equal(clean.begin(), clean.end(), req.begin() + static_cast<std::ptrdiff_t>(fixed)))
      << "an element's padding left the client";
  const size_t rfixed = Lists::kDescriptor.procedures[Lists::kStructs].resultsSize;
  ASSERT_EQ(reply.size(), rfixed + clean.size());
  EXPECT_TRUE(std::equal(clean.begin(), clean.end(), reply.begin() + static_cast<std::ptrdiff_t>(rfixed)))
      << "an element's padding left the server";
}

}  // namespace
}  // namespace lrpc::testing
