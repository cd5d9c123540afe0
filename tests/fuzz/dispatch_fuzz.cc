// libFuzzer entry point: arbitrary bytes as a request frame for the generated dispatch of
// every_type.capnp's Everything (server mode), or as a reply frame read by its generated
// client (client mode). Either way the generated code must answer with a Status, never read
// out of bounds, never crash, and never hand a handler a value it did not validate.
#include "tests/fuzz/dispatch_fuzz.h"

#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "every_type.lrpc.h"
#include "tests/testing/every_type_impl.h"
#include "tests/testing/in_process_channel.h"

namespace {

using lrpc::testing::Everything;

// Calls `procedure` through the generated client with `reply` as the server's answer.
lrpc::Status runClient(uint32_t procedure, std::span<const std::byte> reply) {
  auto channel = std::make_shared<lrpc::testing::ReplayChannel>(reply);
  lrpc::CallChannel* raw = channel.get();
  Everything::Client c(std::make_shared<lrpc::Binding>(Everything::kDescriptor, raw, channel));
  const std::vector<int32_t> ints{1, 2};
  const std::vector<std::string_view> texts{"a", "bc"};
  const std::vector<uint8_t> bytes{1, 2, 3};
  switch (procedure) {
    case Everything::kEchoBool: return c.echoBool(true).status();
    case Everything::kAllInts: return c.allInts(1, 2, 3, 4, 5, 6, 7, 8).status();
    case Everything::kFloats: return c.floats(1, 2).status();
    case Everything::kEnums: return c.enums(lrpc::testing::Mood::kCalm, lrpc::testing::base::Color::kRed).status();
    case Everything::kOuter: return c.outer(lrpc::testing::Outer{}).status();
    case Everything::kNothing: return c.nothing();
    case Everything::kFail: return c.fail(0);
    case Everything::kInts: return c.ints(ints).status();
    case Everything::kBools: return c.bools({}).status();
    case Everything::kMoods: return c.moods({}).status();
    case Everything::kStructs: return c.structs({}).status();
    case Everything::kTexts: return c.texts(texts).status();
    case Everything::kDatas: return c.datas({}).status();
    case Everything::kU64s: return c.u64s({}).status();
    case Everything::kLimitedTexts: return c.limitedTexts(texts).status();
    case Everything::kPing: return c.ping(1).status();
    case Everything::kText: return c.text("x").status();
    case Everything::kData: return c.data(bytes).status();
    case Everything::kLimited: return c.limited("x").status();
    case Everything::kMixed: return c.mixed(1, "t", true, bytes, 2).status();
    case Everything::kDigest: return c.digest(bytes).status();
    case Everything::kSelf: return c.self().status();
    default: return lrpc::Status(lrpc::Errc::kInvalidArgument, "no such procedure");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lrpc::testing::FuzzFrame in;
  if (!lrpc::testing::readFuzzInput(data, size, Everything::kProcedureCount, in)) return 0;

  if (in.clientMode) {
    const std::vector<std::byte> reply = in.joined();
    (void)runClient(in.procedure, reply);
    return 0;
  }
  lrpc::testing::EveryTypeImpl<Everything::Server> impl;
  const uint32_t resultsSize =
      in.procedure < Everything::kProcedureCount ? Everything::kProcedures[in.procedure].resultsSize : 0;
  lrpc::testing::BufferServerCall call(in.fixed, in.tail, resultsSize);
  lrpc::Status s = Everything::Server::dispatch(static_cast<Everything::Server*>(&impl), in.procedure, call);
  if (s.isOk()) {
    if (call.results.size() != resultsSize) __builtin_trap();  // dispatch must not resize the results
    // What the generated server writes, the generated client must accept.
    std::vector<std::byte> reply(call.results);
    reply.insert(reply.end(), call.tail.begin(), call.tail.end());
    if (!runClient(in.procedure, reply).isOk()) __builtin_trap();
  }
  return 0;
}
