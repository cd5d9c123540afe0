// A campaign fuzz target as an ordinary test, always built (linked with exactly one target's
// LLVMFuzzerTestOneInput): every checked-in corpus file, deterministic mutations of each, and
// deterministic random inputs. A failure names the input's origin, so it reproduces.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_target.h"
#include "tests/fuzz/xorshift.h"

namespace lrpc::campaign {
namespace {

using Input = std::vector<uint8_t>;
using lrpc::testing::XorShift;

std::vector<std::pair<std::string, Input>> corpus() {
  std::vector<std::pair<std::string, Input>> out;
  for (const auto& e : std::filesystem::directory_iterator(LRPC_FUZZ_CORPUS)) {
    std::ifstream f(e.path(), std::ios::binary);
    out.emplace_back(e.path().filename().string(), Input(std::istreambuf_iterator<char>(f), {}));
  }
  std::sort(out.begin(), out.end());
  return out;
}

void run(const Input& in) { LLVMFuzzerTestOneInput(in.data(), in.size()); }

TEST(Fuzz, CorpusRuns) {
  auto files = corpus();
  ASSERT_GE(files.size(), 4u) << "corpus missing: " << LRPC_FUZZ_CORPUS;
  for (const auto& [name, in] : files) {
    SCOPED_TRACE(name);
    run(in);
  }
}

TEST(Fuzz, DeterministicMutations) {
  XorShift rng(0x5eed);
  for (const auto& [name, seed] : corpus()) {
    for (int i = 0; i < 25; ++i) {
      Input in = seed;
      int edits = 1 + static_cast<int>(rng.below(4));
      for (int e = 0; e < edits; ++e) {
        switch (rng.below(5)) {
          case 0:
            if (!in.empty()) in[rng.below(in.size())] ^= static_cast<uint8_t>(1u << rng.below(8));
            break;
          case 1:
            if (!in.empty()) in[rng.below(in.size())] = static_cast<uint8_t>(rng.next());
            break;
          case 2:
            in.resize(rng.below(in.size() + 1));
            break;
          case 3: {
            const uint8_t extremes[] = {0, 1, 0x7f, 0x80, 0xff};
            if (!in.empty()) in[rng.below(in.size())] = extremes[rng.below(5)];
            break;
          }
          default:
            in.insert(in.end(), seed.begin(), seed.end());
            break;
        }
      }
      SCOPED_TRACE(name + " mutation " + std::to_string(i));
      run(in);
    }
  }
}

TEST(Fuzz, RandomInputs) {
  XorShift rng(77);
  for (int i = 0; i < 100; ++i) {
    Input in(rng.below(300));
    for (auto& b : in) b = static_cast<uint8_t>(rng.next());
    SCOPED_TRACE("random " + std::to_string(i));
    run(in);
  }
}

}  // namespace
}  // namespace lrpc::campaign
