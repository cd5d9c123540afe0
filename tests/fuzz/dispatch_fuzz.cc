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

// Answers every call with the same reply bytes, as a hostile server would.
class ReplayChannel final : public lrpc::CallChannel {
 public:
  explicit ReplayChannel(std::span<const std::byte> reply) : reply_(reply) {}
  lrpc::Status call(const lrpc::InterfaceDescriptor&, uint32_t, std::span<const std::byte>, lrpc::MessageBuffer& reply,
                    const lrpc::CallOptions&) noexcept override {
    if (lrpc::Status s = reply.resize(reply_.size()); !s.isOk()) return s;
    if (!reply_.empty()) std::memcpy(reply.data(), reply_.data(), reply_.size());
    return {};
  }

 private:
  std::span<const std::byte> reply_;
};

void runClient(uint32_t procedure, std::span<const std::byte> reply) {
  auto channel = std::make_shared<ReplayChannel>(reply);
  lrpc::CallChannel* raw = channel.get();
  Everything::Client c(std::make_shared<lrpc::Binding>(Everything::kDescriptor, raw, channel));
  const std::vector<int32_t> ints{1, 2};
  const std::vector<std::string_view> texts{"a", "bc"};
  const std::vector<uint8_t> bytes{1, 2, 3};
  switch (procedure) {
    case Everything::kEchoBool: (void)c.echoBool(true); break;
    case Everything::kAllInts: (void)c.allInts(1, 2, 3, 4, 5, 6, 7, 8); break;
    case Everything::kFloats: (void)c.floats(1, 2); break;
    case Everything::kEnums: (void)c.enums(lrpc::testing::Mood::kCalm, lrpc::testing::base::Color::kRed); break;
    case Everything::kOuter: (void)c.outer(lrpc::testing::Outer{}); break;
    case Everything::kNothing: (void)c.nothing(); break;
    case Everything::kFail: (void)c.fail(0); break;
    case Everything::kInts: (void)c.ints(ints); break;
    case Everything::kBools: (void)c.bools({}); break;
    case Everything::kMoods: (void)c.moods({}); break;
    case Everything::kStructs: (void)c.structs({}); break;
    case Everything::kTexts: (void)c.texts(texts); break;
    case Everything::kDatas: (void)c.datas({}); break;
    case Everything::kU64s: (void)c.u64s({}); break;
    case Everything::kLimitedTexts: (void)c.limitedTexts(texts); break;
    case Everything::kPing: (void)c.ping(1); break;
    case Everything::kText: (void)c.text("x"); break;
    case Everything::kData: (void)c.data(bytes); break;
    case Everything::kLimited: (void)c.limited("x"); break;
    case Everything::kMixed: (void)c.mixed(1, "t", true, bytes, 2); break;
    case Everything::kSelf: (void)c.self(); break;
    default: break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const bool clientMode = (data[0] & 0x80) != 0;
  const uint32_t procedure = (data[0] & 0x7fu) % (Everything::kProcedureCount + 2);
  const size_t fixedLen = std::min<size_t>(static_cast<size_t>(data[1] | (data[2] << 8)), size - 3);
  // Exact-size private copies, so that the sanitizers see any read past either part.
  std::vector<std::byte> fixed(fixedLen), tail(size - 3 - fixedLen);
  if (!fixed.empty()) std::memcpy(fixed.data(), data + 3, fixed.size());
  if (!tail.empty()) std::memcpy(tail.data(), data + 3 + fixedLen, tail.size());

  if (clientMode) {
    std::vector<std::byte> reply(fixed);
    reply.insert(reply.end(), tail.begin(), tail.end());
    runClient(procedure, reply);
    return 0;
  }
  lrpc::testing::EveryTypeImpl<Everything::Server> impl;
  const uint32_t resultsSize =
      procedure < Everything::kProcedureCount ? Everything::kProcedures[procedure].resultsSize : 0;
  lrpc::testing::BufferServerCall call(fixed, tail, resultsSize);
  lrpc::Status s = Everything::Server::dispatch(static_cast<Everything::Server*>(&impl), procedure, call);
  if (s.isOk() && call.results.size() != resultsSize) __builtin_trap();  // dispatch must not resize the results
  return 0;
}
