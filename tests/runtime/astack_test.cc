// The A-stack region layout (runtime/astack.h) and the shared-memory RAII types.
#include "runtime/astack.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/shm.h"
#include "runtime/stub_support.h"

namespace lrpc {
namespace {

constexpr ProcedureDescriptor kProcs[] = {
    {0, 0, "null", 0, 0, 1, 5, 0, false},
    {1, 1, "add", 8, 4, 4, 3, 8, false},
    {2, 2, "blob", 16, 8, 8, 2, 1500, true},
    {3, 3, "big", 200, 200, 8, 1, 200, false},
};
constexpr InterfaceDescriptor kIface = {"astack_test:Iface", 1, 2, kProcs, 4, nullptr};

TEST(RegionLayoutTest, EveryAStackIsCacheLineAlignedAndInsideTheRegion) {
  Result<RegionLayout> l = RegionLayout::compute(kIface);
  ASSERT_TRUE(l.isOk()) << l.status().toString();
  EXPECT_EQ(l->astackCount(), 5u + 3u + 2u + 1u);
  EXPECT_EQ(l->regionBytes() % 4096, 0u);
  uint64_t prevEnd = sizeof(RegionHeader);
  for (uint32_t i = 0; i < l->astackCount(); ++i) {
    const ProcedureLayout& p = l->procedure(l->procedureOf(i));
    uint64_t off = l->astackOffset(i);
    EXPECT_EQ(off % kCacheLine, 0u) << i;
    EXPECT_EQ(off, prevEnd) << i;  // packed, in PDL order
    prevEnd = off + p.stride;
    EXPECT_LE(prevEnd, l->regionBytes());
    EXPECT_EQ(p.stride, kControlBytes + p.frameBytes);
    EXPECT_GE(p.frameBytes, p.resultsOff + kMinErrorBytes);
  }
}

TEST(RegionLayoutTest, FramePartsDoNotOverlap) {
  Result<RegionLayout> l = RegionLayout::compute(kIface);
  ASSERT_TRUE(l.isOk());
  for (uint32_t p = 0; p < l->procedureCount(); ++p) {
    const ProcedureLayout& pl = l->procedure(p);
    EXPECT_LE(pl.argsSize, pl.argTailOff);
    EXPECT_LE(uint64_t{pl.argTailOff} + pl.tailRoom, pl.returnOff);
    EXPECT_EQ((kControlBytes + pl.returnOff) % kCacheLine, 0u);  // the return block opens a line
    EXPECT_EQ(pl.resultsOff, pl.returnOff + kControlBytes);
    EXPECT_LE(uint64_t{pl.resultsOff} + pl.resultsSize, pl.resultTailOff);
    EXPECT_LE(uint64_t{pl.resultTailOff} + pl.tailRoom, pl.frameBytes);
    EXPECT_EQ(pl.resultsOff % 8, 0u);
  }
  // Small fixed frames fit their blocks' lines: Add moves one cache line each way.
  const ProcedureLayout& add = l->procedure(1);
  EXPECT_LE(kControlBytes + add.argsSize, kCacheLine);
  EXPECT_EQ(kControlBytes + add.returnOff, kCacheLine);
  EXPECT_LE(kControlBytes + add.resultsSize, kCacheLine);
  EXPECT_EQ(l->procedure(0).tailRoom, 0u);
  EXPECT_GE(l->procedure(2).tailRoom, 1500u - 16u);
}

TEST(RegionLayoutTest, RefusesMalformedDescriptors) {
  ProcedureDescriptor tooMany[] = {{0, 0, "x", 0, 0, 1, kMaxAStacksPerBinding + 1, 0, false}};
  EXPECT_EQ(RegionLayout::compute({"t", 1, 2, tooMany, 1, nullptr}).status().code(), Errc::kInvalidArgument);
  ProcedureDescriptor zero[] = {{0, 0, "x", 0, 0, 1, 0, 0, false}};
  EXPECT_EQ(RegionLayout::compute({"t", 1, 2, zero, 1, nullptr}).status().code(), Errc::kInvalidArgument);
  ProcedureDescriptor huge[] = {{0, 0, "x", kMaxAStackBytes + 1, 0, 1, 1, 0, false}};
  EXPECT_EQ(RegionLayout::compute({"t", 1, 2, huge, 1, nullptr}).status().code(), Errc::kInvalidArgument);
  EXPECT_EQ(RegionLayout::compute({"t", 1, 2, nullptr, 0, nullptr}).status().code(), Errc::kInvalidArgument);
}

TEST(SharedMemoryTest, CreatedMemoryIsZeroedAndSealed) {
  Result<SharedMemory> m = SharedMemory::create("astack_test", 8192);
  ASSERT_TRUE(m.isOk()) << m.status().toString();
  EXPECT_EQ(m->size(), 8192u);
  for (size_t i = 0; i < m->size(); ++i) ASSERT_EQ(m->data()[i], std::byte{0});
  EXPECT_NE(::ftruncate(m->fd(), 4096), 0);    // F_SEAL_SHRINK
  EXPECT_NE(::ftruncate(m->fd(), 16384), 0);   // F_SEAL_GROW
  EXPECT_NE(::fcntl(m->fd(), F_ADD_SEALS, F_SEAL_WRITE), 0);  // F_SEAL_SEAL
}

TEST(SharedMemoryTest, AdoptChecksSizeAndSeals) {
  Result<SharedMemory> m = SharedMemory::create("astack_test", 4096);
  ASSERT_TRUE(m.isOk());
  m->data()[10] = std::byte{42};
  Result<SharedMemory> same = SharedMemory::adopt(OwnedFd(::dup(m->fd())), 4096);
  ASSERT_TRUE(same.isOk()) << same.status().toString();
  EXPECT_EQ(same->data()[10], std::byte{42});  // the same pages, mapped again
  EXPECT_EQ(SharedMemory::adopt(OwnedFd(::dup(m->fd())), 8192).status().code(), Errc::kBindingRejected);
  // An unsealed memfd is refused: its sender could shrink it under our mapping.
  OwnedFd loose(::memfd_create("loose", MFD_CLOEXEC));
  ASSERT_EQ(::ftruncate(loose.get(), 4096), 0);
  EXPECT_EQ(SharedMemory::adopt(std::move(loose), 4096).status().code(), Errc::kBindingRejected);
  EXPECT_EQ(SharedMemory::create("x", 0).status().code(), Errc::kInvalidArgument);
}

}  // namespace
}  // namespace lrpc
