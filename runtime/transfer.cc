#include "runtime/transfer.h"

#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

namespace lrpc {

std::string_view transferModeName(TransferMode mode) noexcept {
  switch (mode) {
    case TransferMode::kAdaptive: return "adaptive";
    case TransferMode::kSpin: return "spin";
    case TransferMode::kBlock: return "block";
  }
  return "?";
}

namespace detail {

int64_t monotonicNs() noexcept {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// Not FUTEX_PRIVATE_FLAG: the word lives in a MAP_SHARED memfd that two processes map.
void futexWake(std::atomic<uint32_t>& word) noexcept {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

int futexWait(std::atomic<uint32_t>& word, uint32_t expected, int64_t timeoutNs) noexcept {
  timespec ts;
  timespec* tsp = nullptr;
  if (timeoutNs >= 0) {
    ts.tv_sec = timeoutNs / 1'000'000'000;
    ts.tv_nsec = timeoutNs % 1'000'000'000;
    tsp = &ts;
  }
  long r = ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT, expected, tsp, nullptr, 0);
  if (r == 0) return 0;
  if (errno == EAGAIN) return 0;  // the word changed before we slept
  return errno;
}

bool peerGone(int fd) noexcept {
  pollfd p{fd, POLLRDHUP, 0};
  int r = ::poll(&p, 1, 0);
  if (r < 0) return errno != EINTR;
  return (p.revents & (POLLHUP | POLLERR | POLLRDHUP | POLLNVAL)) != 0;
}

namespace {
// Announces that we are about to sleep on `word` whose current value is `seen`. Returns the
// value to futex_wait on, or 0 when the word changed meanwhile (re-check it instead).
bool announceSleep(std::atomic<uint32_t>& word, uint32_t& seen) noexcept {
  if (seen & kDoorbellSleeping) return true;
  // Relaxed is enough: the CAS only has to be ordered with the publisher's exchange on the same
  // word, and any data we later read is ordered by the acquire load that sees the new seq.
  if (word.compare_exchange_strong(seen, seen | kDoorbellSleeping, std::memory_order_relaxed)) {
    seen |= kDoorbellSleeping;
    return true;
  }
  return false;
}
}  // namespace

WaitResult waitForReturn(std::atomic<uint32_t>& word, uint32_t seq, TransferMode mode, int liveFd,
                         int64_t deadlineNs, uint32_t adaptiveSpins) noexcept {
  uint32_t spins = 0;
  for (;;) {
    // Acquire: pairs with the server's release in ring(); after it we may read the results.
    uint32_t v = word.load(std::memory_order_acquire);
    if (seqIs(v, seq)) return WaitResult::kReady;
    bool spin = mode == TransferMode::kSpin || (mode == TransferMode::kAdaptive && spins < adaptiveSpins);
    if (spin) {
      cpuRelax();
      ++spins;
      if (spins % kYieldEvery == 0) ::sched_yield();
      if (spins % kCheckEvery == 0) {
        if (peerGone(liveFd)) return WaitResult::kPeerDied;
        if (deadlineNs != 0 && monotonicNs() >= deadlineNs) return WaitResult::kTimedOut;
      }
      continue;
    }
    if (!announceSleep(word, v)) continue;
    int64_t slice = kSleepSliceNs;
    if (deadlineNs != 0) {
      int64_t left = deadlineNs - monotonicNs();
      if (left <= 0) return WaitResult::kTimedOut;
      if (left < slice) slice = left;
    }
    if (futexWait(word, v, slice) == ETIMEDOUT) {
      // Acquire, as above: a return that landed as the slice ran out is still a return.
      if (seqIs(word.load(std::memory_order_acquire), seq)) return WaitResult::kReady;
      if (peerGone(liveFd)) return WaitResult::kPeerDied;
      if (deadlineNs != 0 && monotonicNs() >= deadlineNs) return WaitResult::kTimedOut;
    }
  }
}

WaitResult waitForCall(std::atomic<uint32_t>& word, uint32_t lastSeq, TransferMode mode,
                       const std::atomic<bool>& stop, uint32_t* seq) noexcept {
  uint32_t spins = 0;
  int64_t idleSince = 0;
  for (;;) {
    // Acquire: pairs with the client's release in ring(); after it we may read the frame.
    uint32_t v = word.load(std::memory_order_acquire);
    // Acquire, after the word: if we saw stopWaiter's change we also see the flag set before it.
    if (stop.load(std::memory_order_acquire)) return WaitResult::kStopped;
    if ((v >> 1) != (lastSeq & kSeqMask)) {
      *seq = v >> 1;
      return WaitResult::kReady;
    }
    bool spin = false;
    if (mode == TransferMode::kAdaptive) {
      spin = spins < kAdaptiveSpins;
    } else if (mode == TransferMode::kSpin) {
      spin = true;
      if (spins % kCheckEvery == kCheckEvery - 1) {
        int64_t now = monotonicNs();
        if (idleSince == 0) idleSince = now;
        spin = now - idleSince < kSpinIdleNs;
      }
    }
    if (spin) {
      cpuRelax();
      ++spins;
      if (spins % kYieldEvery == 0) ::sched_yield();
      continue;
    }
    if (!announceSleep(word, v)) continue;
    futexWait(word, v, -1);
    spins = 0;
    idleSince = 0;
  }
}

void stopWaiter(std::atomic<uint32_t>& word) noexcept {
  // Changing the value makes a futex_wait that has not started yet return at once; the wake
  // covers one already asleep. The sequence it leaves behind is never used: the thread exits.
  // Release: a waiter that sees the new value must also see the stop flag set before it.
  word.fetch_add(2, std::memory_order_release);
  futexWake(word);
}

}  // namespace detail
}  // namespace lrpc
