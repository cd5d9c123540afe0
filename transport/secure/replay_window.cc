#include "transport/secure/replay_window.h"

namespace lrpc::secure {

ReplayWindow::Verdict ReplayWindow::check(uint64_t counter) const noexcept {
  if (counter > highest_) return Verdict::kFresh;
  if (highest_ - counter >= kWindow) return Verdict::kTooOld;
  const uint64_t block = (counter / kBlockBits) % kBlocks;
  const uint64_t bit = uint64_t{1} << (counter % kBlockBits);
  return (blocks_[block] & bit) != 0 ? Verdict::kDuplicate : Verdict::kFresh;
}

bool ReplayWindow::accept(uint64_t counter) noexcept {
  if (check(counter) != Verdict::kFresh) return false;
  if (counter > highest_) {
    // Clear every block the window moves over (all of them for a jump of a full ring).
    const uint64_t from = highest_ / kBlockBits;
    const uint64_t to = counter / kBlockBits;
    const uint64_t steps = to - from;
    for (uint64_t i = 1; i <= steps && i <= kBlocks; ++i) blocks_[(from + i) % kBlocks] = 0;
    highest_ = counter;
  }
  blocks_[(counter / kBlockBits) % kBlocks] |= uint64_t{1} << (counter % kBlockBits);
  return true;
}

}  // namespace lrpc::secure
