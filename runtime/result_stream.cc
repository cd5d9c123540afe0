// The client's side of a streamed result tail (runtime/astack_format.md, "Streaming a large
// result"): the server published the return before it had written all of the tail, and counts
// the final bytes in ReturnControl::resultReady while this thread copies them out.
#include <sched.h>

#include <algorithm>

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
  uint32_t ready = 0;  // never trusted beyond the tail, and never moves back
  uint32_t spins = 0;
  int64_t stalledSince = 0;
  uint32_t lastSeen = 0;
  for (size_t done = 0; done < ref.length;) {
    const size_t c = std::min<size_t>(ref.length - done, kStreamChunk);
    const size_t end = size_t{ref.offset} + done + c;
    while (ready < end) {
      // Acquire: pairs with the server's release after it wrote the bytes it counts.
      const uint32_t v = std::min(ret->resultReady.load(std::memory_order_acquire), total);
      if (v > ready) ready = v;
      if (ready >= end) break;
      detail::cpuRelax();
      if (++spins % detail::kYieldEvery == 0) ::sched_yield();  // the writer may share our core
      if (spins % detail::kCheckEvery != 0) continue;
      Errc why = Errc::kOk;
      const int64_t now = detail::monotonicNs();
      if (detail::peerGone(socket())) {
        markDead();
        return Status(Errc::kPeerDied, "server process went away while it wrote the call's result");
      }
      if (deadlineNs != 0 && now >= deadlineNs) {
        why = Errc::kDeadlineExceeded;
      } else if (v != lastSeen || stalledSince == 0) {
        lastSeen = v;
        stalledSince = now;
      } else if (now - stalledSince > kStreamStallNs) {
        why = Errc::kBadFrame;
      }
      if (why != Errc::kOk) {
        abandon(index, seq, total);
        return why == Errc::kDeadlineExceeded ? Status(why, "deadline passed while the result was still arriving")
                                              : Status(why, "the server stopped writing its streamed result");
      }
    }
    out.insert(out.end(), p + done, p + done + c);
    done += c;
  }
  return {};
}

}  // namespace lrpc
