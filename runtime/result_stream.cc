// The client's side of a streamed result tail (runtime/astack_format.md, "Streaming a large
// result"): the server published the return before it had written all of the tail, and counts
// the final bytes in ReturnControl::resultReady while this thread copies them out.
#include <algorithm>

#include "runtime/base/bulk_copy.h"
#include "runtime/local_binding.h"

namespace lrpc {

Status LocalBinding::copyStreamedResult(uint32_t index, uint32_t seq, std::span<const std::byte> tail, VarRef ref,
                                        std::vector<uint8_t>& out, int64_t deadlineNs) noexcept {
  ReturnControl* ret = returnControl(index);
  const auto total = static_cast<uint32_t>(tail.size());
  const auto* p = reinterpret_cast<const uint8_t*>(tail.data() + ref.offset);
  // Not resize: that would write every byte once more before the copy does.
  out.clear();
  out.reserve(ref.length);
  uint32_t ready = 0;
  // Only the socket's hang-up and the deadline end the wait early; both are looked at rarely.
  auto giveUp = [&]() noexcept -> Status {
    if (detail::peerGone(socket())) {
      markDead();
      return Status(Errc::kPeerDied, "server process went away while it wrote the call's result");
    }
    if (deadlineNs != 0 && detail::monotonicNs() >= deadlineNs) {
      return Status(Errc::kDeadlineExceeded, "deadline passed while the result was still arriving");
    }
    return {};
  };
  for (size_t done = 0; done < ref.length;) {
    const size_t c = std::min<size_t>(ref.length - done, kStreamChunk);
    Status s = detail::awaitStreamCount(ret->resultReady, total, size_t{ref.offset} + done + c, ready, giveUp,
                                        "the server stopped writing its streamed result");
    if (!s.isOk()) {
      // A server still writing must not write into the next call's results: the A-stack waits.
      if (s.code() != Errc::kPeerDied) abandon(index, seq, total);
      return s;
    }
    detail::appendBulk(out, p + done, c);
    done += c;
  }
  return {};
}

}  // namespace lrpc
