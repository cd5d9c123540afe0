// ViewArena, the per-call storage behind view types: its own bump allocator (inline room, then
// doubling chunks) must hand out aligned, disjoint storage that lives as long as the arena,
// whatever the sizes asked for, and destroy what needs destroying.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/codec_view.h"

namespace lrpc {
namespace {

TEST(ViewArena, SpansAreAlignedDisjointAndKeepTheirValues) {
  ViewArena arena;
  struct Piece {
    std::span<uint64_t> words;
    uint64_t tag;
  };
  std::vector<Piece> pieces;
  // Small, odd and large requests: through the inline room and several chunks, one of them
  // larger than the chunk size the arena would pick next.
  const size_t sizes[] = {1, 3, 7, 100, 1, 5000, 2, 70'000, 9, 1, 300'000, 4};
  uint64_t tag = 1;
  for (size_t n : sizes) {
    std::span<uint64_t> s = arena.make<uint64_t>(n);
    ASSERT_EQ(s.size(), n);
    ASSERT_EQ(reinterpret_cast<uintptr_t>(s.data()) % alignof(uint64_t), 0u);
    for (uint64_t& w : s) {
      ASSERT_EQ(w, 0u);  // value-initialized
      w = tag;
    }
    pieces.push_back({s, tag++});
    std::span<const std::byte> odd = arena.copy(std::as_bytes(std::span<const char>("xyz", 3)));
    ASSERT_EQ(reinterpret_cast<uintptr_t>(odd.data()) % 8, 0u);
    ASSERT_EQ(std::string_view(reinterpret_cast<const char*>(odd.data()), odd.size()), "xyz");
  }
  for (const Piece& p : pieces) {
    for (uint64_t w : p.words) ASSERT_EQ(w, p.tag);
  }
  EXPECT_TRUE(arena.make<uint64_t>(0).empty());
  EXPECT_TRUE(arena.copy({}).empty());
}

TEST(ViewArena, DestroysWhatNeedsDestroying) {
  static int live = 0;
  struct Counted {
    Counted() { ++live; }
    ~Counted() { --live; }
  };
  {
    ViewArena arena;
    (void)arena.make<Counted>(3);
    (void)arena.make<Counted>(2000);  // beyond the inline room
    EXPECT_EQ(live, 2003);
  }
  EXPECT_EQ(live, 0);
}

}  // namespace
}  // namespace lrpc
