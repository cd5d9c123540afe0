// The receive-side anti-replay window of RFC 6479: a ring of 64-bit blocks, so advancing the
// window clears whole blocks instead of shifting a bitmap. Counters from the highest seen
// down to (highest - kWindow + 1) are tracked one bit each; older ones are refused.
#pragma once

#include <array>
#include <cstdint>

namespace lrpc::secure {

class ReplayWindow {
 public:
  static constexpr unsigned kBlocks = 64;  // a power of two: 4096 bits, 512 bytes
  static constexpr uint64_t kBlockBits = 64;
  // One block is the one being advanced into, so the window guaranteed is one block less.
  static constexpr uint64_t kWindow = (kBlocks - 1) * kBlockBits;

  enum class Verdict { kFresh, kDuplicate, kTooOld };

  // Whether `counter` may be accepted; changes nothing (call before authenticating).
  Verdict check(uint64_t counter) const noexcept;
  // Records `counter` as received (call only after the datagram authenticated). Returns
  // false, changing nothing, when check() would not have said kFresh.
  bool accept(uint64_t counter) noexcept;

  uint64_t highest() const noexcept { return highest_; }

 private:
  std::array<uint64_t, kBlocks> blocks_{};
  uint64_t highest_ = 0;  // counter 0 is fresh at first: its bit is still clear
};

}  // namespace lrpc::secure
