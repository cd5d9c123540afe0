// The dispatch fuzz target as an ordinary test, always built: every checked-in corpus file,
// seeds captured from real calls (both directions), and deterministic mutations of all of
// them go through LLVMFuzzerTestOneInput. With LRPC_WRITE_CORPUS=<dir> set, the captured
// seeds are also written there (how tests/fuzz/corpus/dispatch/ was made).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "every_type.lrpc.h"
#include "tests/fuzz/dispatch_fuzz.h"
#include "tests/fuzz/xorshift.h"
#include "tests/testing/every_type_impl.h"
#include "tests/testing/in_process_channel.h"

namespace lrpc::testing {
namespace {

using Input = std::vector<uint8_t>;

void run(const Input& in) { LLVMFuzzerTestOneInput(in.data(), in.size()); }

Input mutate(const Input& seed, XorShift& rng) {
  Input m = seed;
  const int edits = 1 + static_cast<int>(rng.below(4));
  for (int e = 0; e < edits; ++e) {
    switch (rng.below(6)) {
      case 0:  // flip a byte
        if (!m.empty()) m[rng.below(m.size())] ^= static_cast<uint8_t>(1 + rng.below(255));
        break;
      case 1:  // truncate
        m.resize(rng.below(m.size() + 1));
        break;
      case 2:  // append junk
        for (size_t i = rng.below(32); i > 0; --i) m.push_back(static_cast<uint8_t>(rng.next()));
        break;
      case 3: {  // an interesting 32-bit value (VarRef offsets and lengths) anywhere
        static const uint32_t kValues[] = {0, 1, 7, 8, 0x7fffffff, 0x80000000, 0xfffffff8, 0xffffffff};
        if (m.size() >= 4) {
          uint32_t v = kValues[rng.below(std::size(kValues))];
          std::memcpy(m.data() + rng.below(m.size() - 3), &v, 4);
        }
        break;
      }
      case 4:  // another procedure, same bytes
        if (!m.empty()) m[0] = static_cast<uint8_t>((m[0] & 0x80) | rng.below(0x80));
        break;
      default:  // switch server/client mode
        if (!m.empty()) m[0] ^= 0x80;
        break;
    }
  }
  return m;
}

// Valid requests and replies of every Everything method, captured from real calls.
std::vector<Input> seedsFromRealCalls() {
  EveryTypeImpl<Everything::Server> impl;
  auto bound = bindInProcess<Everything>(impl);
  Everything::Client c(bound.binding);
  std::vector<Input> seeds;
  std::vector<std::byte> reply;
  bound.channel->tamperReply = [&](MessageBuffer& r) { reply.assign(r.data(), r.data() + r.size()); };
  auto capture = [&](uint32_t procedure, const std::function<void()>& call) {
    reply.clear();
    call();
    const auto& d = Everything::kProcedures[procedure];
    const auto& req = bound.channel->lastRequest;
    std::vector<std::byte> fixed(req.begin(), req.begin() + d.argsSize), tail(req.begin() + d.argsSize, req.end());
    seeds.push_back(fuzzInput(false, procedure, fixed, tail));
    if (reply.size() >= d.resultsSize) {
      std::vector<std::byte> rf(reply.begin(), reply.begin() + d.resultsSize), rt(reply.begin() + d.resultsSize, reply.end());
      seeds.push_back(fuzzInput(true, procedure, rf, rt));
    }
  };
  Outer o{};
  o.inner.flag = true;
  const std::vector<std::string_view> texts{"alpha", "", "gamma"};
  const std::vector<uint8_t> bytes{0, 1, 2, 3, 4};
  const std::vector<std::span<const uint8_t>> datas{bytes, {}};
  const bool flags[] = {true, false, true};
  capture(Everything::kEchoBool, [&] { (void)c.echoBool(true); });
  capture(Everything::kAllInts, [&] { (void)c.allInts(-1, -2, -3, -4, 5, 6, 7, 8); });
  capture(Everything::kFloats, [&] { (void)c.floats(1.5f, -2.5); });
  capture(Everything::kEnums, [&] { (void)c.enums(Mood::kAngry, base::Color::kBlue); });
  capture(Everything::kOuter, [&] { (void)c.outer(o); });
  capture(Everything::kNothing, [&] { (void)c.nothing(); });
  capture(Everything::kFail, [&] { (void)c.fail(1); });
  capture(Everything::kInts, [&] { (void)c.ints(std::vector<int32_t>{1, -1, 1000}); });
  capture(Everything::kBools, [&] { (void)c.bools(flags); });
  capture(Everything::kMoods, [&] { (void)c.moods(std::vector<Mood>{Mood::kCalm, Mood::kAngry}); });
  capture(Everything::kStructs, [&] { (void)c.structs(std::vector<Outer>{o, o}); });
  capture(Everything::kTexts, [&] { (void)c.texts(texts); });
  capture(Everything::kDatas, [&] { (void)c.datas(datas); });
  capture(Everything::kU64s, [&] { (void)c.u64s(std::vector<uint64_t>{1, 2, 3}); });
  capture(Everything::kLimitedTexts, [&] { (void)c.limitedTexts(texts); });
  capture(Everything::kPing, [&] { (void)c.ping(9); });
  capture(Everything::kText, [&] { (void)c.text("hello"); });
  capture(Everything::kData, [&] { (void)c.data(bytes); });
  capture(Everything::kLimited, [&] { (void)c.limited("short"); });
  capture(Everything::kMixed, [&] { (void)c.mixed(1, "text", true, bytes, -5); });
  capture(Everything::kDigest, [&] { (void)c.digest(bytes); });
  capture(Everything::kSelf, [&] { (void)c.self(); });
  return seeds;
}

std::vector<Input> corpus() {
  std::vector<Input> out;
  for (const auto& entry : std::filesystem::directory_iterator(LRPC_FUZZ_CORPUS)) {
    std::ifstream in(entry.path(), std::ios::binary);
    out.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return out;
}

TEST(DispatchFuzz, CheckedInCorpus) {
  auto files = corpus();
  EXPECT_GE(files.size(), 20u);
  for (const auto& in : files) run(in);
}

TEST(DispatchFuzz, SeedsFromRealCalls) {
  auto seeds = seedsFromRealCalls();
  EXPECT_EQ(seeds.size(), 2u * 22u);  // every request and every reply (fail(1)'s is empty)
  for (const auto& in : seeds) run(in);
  if (const char* dir = std::getenv("LRPC_WRITE_CORPUS")) {
    for (size_t i = 0; i < seeds.size(); ++i) {
      std::ofstream out(std::string(dir) + "/seed_" + std::to_string(i), std::ios::binary);
      out.write(reinterpret_cast<const char*>(seeds[i].data()), static_cast<std::streamsize>(seeds[i].size()));
    }
  }
}

TEST(DispatchFuzz, DeterministicMutations) {
  auto inputs = corpus();
  for (auto& s : seedsFromRealCalls()) inputs.push_back(std::move(s));
  XorShift rng(0x5eed);
  size_t runs = 0;
  for (const auto& seed : inputs) {
    for (int i = 0; i < 300; ++i, ++runs) run(mutate(seed, rng));
  }
  EXPECT_GT(runs, 10000u);
}

TEST(DispatchFuzz, ShortAndEmptyInputs) {
  for (size_t n = 0; n < 8; ++n) {
    for (int first = 0; first < 256; first += 5) {
      Input in(n, 0xff);
      if (n) in[0] = static_cast<uint8_t>(first);
      run(in);
    }
  }
}

}  // namespace
}  // namespace lrpc::testing
