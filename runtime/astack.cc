#include "runtime/astack.h"

#include <string>

#include "runtime/stub_support.h"

namespace lrpc {

namespace {
constexpr uint64_t roundUp(uint64_t n, uint64_t to) { return (n + to - 1) / to * to; }
}  // namespace

Result<RegionLayout> RegionLayout::compute(const InterfaceDescriptor& iface) {
  if (iface.procedureCount == 0 || iface.procedures == nullptr) {
    return Status(Errc::kInvalidArgument, std::string(iface.name ? iface.name : "?") + " has no procedures");
  }
  RegionLayout l;
  l.procs_.reserve(iface.procedureCount);
  uint64_t offset = sizeof(RegionHeader);
  uint32_t first = 0;
  for (uint32_t p = 0; p < iface.procedureCount; ++p) {
    const ProcedureDescriptor& d = iface.procedures[p];
    std::string what = std::string(iface.name ? iface.name : "?") + "." + (d.name ? d.name : "?");
    if (d.argsSize > kMaxAStackBytes || d.resultsSize > kMaxAStackBytes || d.astackBytes > kMaxAStackBytes) {
      return Status(Errc::kInvalidArgument, what + ": frame larger than an A-stack may be");
    }
    if (d.astackCount == 0 || d.astackCount > kMaxAStacksPerBinding - first) {
      return Status(Errc::kInvalidArgument, what + ": A-stack count out of range");
    }
    ProcedureLayout pl{};
    pl.firstAStack = first;
    pl.count = d.astackCount;
    pl.firstOffset = offset;
    pl.argsSize = d.argsSize;
    pl.resultsSize = d.resultsSize;
    uint32_t fixed = d.argsSize > d.resultsSize ? d.argsSize : d.resultsSize;
    // Arguments and results live in different cache lines (the return block opens the first
    // line after the argument tail), each with its own inline tail.
    pl.tailRoom = d.variable && d.astackBytes > fixed ? static_cast<uint32_t>(roundUp(d.astackBytes - fixed, 8)) : 0;
    pl.argTailOff = static_cast<uint32_t>(roundUp(d.argsSize, 8));
    uint64_t returnAt = roundUp(uint64_t{kControlBytes} + pl.argTailOff + pl.tailRoom, kCacheLine);
    pl.returnOff = static_cast<uint32_t>(returnAt - kControlBytes);
    pl.resultsOff = pl.returnOff + kControlBytes;
    pl.resultTailOff = static_cast<uint32_t>(roundUp(uint64_t{pl.resultsOff} + d.resultsSize, 8));
    uint64_t frame = uint64_t{pl.resultTailOff} + pl.tailRoom;
    if (frame < uint64_t{pl.resultsOff} + kMinErrorBytes) frame = uint64_t{pl.resultsOff} + kMinErrorBytes;
    uint64_t stride = roundUp(kControlBytes + frame, kCacheLine);
    pl.frameBytes = static_cast<uint32_t>(stride - kControlBytes);
    pl.stride = static_cast<uint32_t>(stride);
    offset += stride * d.astackCount;
    if (offset > kMaxRegionBytes) return Status(Errc::kInvalidArgument, what + ": A-stack region too large");
    for (uint32_t i = 0; i < d.astackCount; ++i) l.procOfAStack_.push_back(p);
    first += d.astackCount;
    l.procs_.push_back(pl);
  }
  l.regionBytes_ = roundUp(offset, 4096);
  return l;
}

}  // namespace lrpc
