// The packet fuzz target as an ordinary test, always built: every file of the checked-in
// corpus (tests/transport/corpus/packet/) and deterministic mutations of each go through
// LLVMFuzzerTestOneInput. Never a crash, never a sanitizer report, never a wrong delivery
// (the harness traps if the server ever sends something that does not decode).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "tests/fuzz/packet_fuzz.h"

namespace {

using Input = std::vector<uint8_t>;

uint64_t next(uint64_t& s) {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

std::vector<Input> corpus() {
  std::vector<Input> out;
  for (const auto& e : std::filesystem::directory_iterator(LRPC_PACKET_CORPUS)) {
    std::ifstream f(e.path(), std::ios::binary);
    out.emplace_back(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  return out;
}

TEST(PacketFuzz, CorpusRuns) {
  auto inputs = corpus();
  ASSERT_GE(inputs.size(), 5u) << "corpus missing at " << LRPC_PACKET_CORPUS;
  for (const auto& in : inputs) LLVMFuzzerTestOneInput(in.data(), in.size());
}

TEST(PacketFuzz, DeterministicMutations) {
  uint64_t s = 0x9e3779b97f4a7c15ull;
  for (const auto& seed : corpus()) {
    for (int i = 0; i < 300; ++i) {
      Input m = seed;
      int edits = 1 + static_cast<int>(next(s) % 4);
      for (int e = 0; e < edits; ++e) {
        switch (next(s) % 5) {
          case 0:
            if (!m.empty()) m[next(s) % m.size()] ^= static_cast<uint8_t>(1 + next(s) % 255);
            break;
          case 1:
            if (!m.empty()) m.resize(next(s) % m.size());
            break;
          case 2: m.push_back(static_cast<uint8_t>(next(s))); break;
          case 3:  // a field-sized overwrite with an extreme value
            if (m.size() >= 8) {
              size_t at = next(s) % (m.size() - 4);
              uint32_t v = (next(s) & 1) ? 0xffffffffu : static_cast<uint32_t>(next(s) % 70000);
              std::memcpy(m.data() + at, &v, 4);
            }
            break;
          case 4:  // duplicate the input (replay every record)
            m.insert(m.end(), seed.begin(), seed.end());
            break;
        }
      }
      LLVMFuzzerTestOneInput(m.data(), m.size());
    }
  }
}

TEST(PacketFuzz, RandomBytes) {
  uint64_t s = 12345;
  for (int i = 0; i < 2000; ++i) {
    Input m(next(s) % 300);
    for (auto& b : m) b = static_cast<uint8_t>(next(s));
    LLVMFuzzerTestOneInput(m.data(), m.size());
  }
}

}  // namespace
