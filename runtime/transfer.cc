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

int64_t coarseMonotonicNs() noexcept {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
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
// Sleeps on `word` unless it has moved from `seen`, for at most timeoutNs (< 0: forever).
// Returns futexWait's result (0 also when the word had moved).
int sleepOn(std::atomic<uint32_t>& word, std::atomic<uint32_t>& sleeping, uint32_t seen, int64_t timeoutNs) noexcept {
  // Seq_cst store, then a seq_cst load of the word: ordered as in ring(), the publisher's
  // mirror image (its store of seq, a fence, its load of the flag).
  sleeping.store(1, std::memory_order_seq_cst);
  int r = 0;
  if (word.load(std::memory_order_seq_cst) == seen) r = futexWait(word, seen, timeoutNs);
  // Relaxed: only spares the publisher a needless wake; a stale 1 costs it one system call.
  sleeping.store(0, std::memory_order_relaxed);
  return r;
}
}  // namespace

WaitResult waitForReturn(std::atomic<uint32_t>& word, std::atomic<uint32_t>& sleeping, uint32_t seq, TransferMode mode,
                         int liveFd, LazyDeadline& deadline, uint32_t adaptiveSpins, Help help) noexcept {
  uint32_t spins = 0;
  for (;;) {
    // Acquire: pairs with the server's release in ring(); after it we may read the results.
    uint32_t v = word.load(std::memory_order_acquire);
    if (seqIs(v, seq)) return WaitResult::kReady;
    if (help.fn != nullptr && help.fn(help.context)) {
      // What it served ran to its end; only then is the deadline looked at again.
      if (deadline.passed()) return WaitResult::kTimedOut;
      spins = 0;
      continue;
    }
    bool spin = mode == TransferMode::kSpin || (mode == TransferMode::kAdaptive && spins < adaptiveSpins);
    if (spin) {
      cpuRelax();
      ++spins;
      if (spins % kYieldEvery == 0) ::sched_yield();
      if (spins % kCheckEvery == 0) {
        if (peerGone(liveFd)) return WaitResult::kPeerDied;
        if (deadline.passed()) return WaitResult::kTimedOut;
      }
      continue;
    }
    if (help.fn != nullptr) return WaitResult::kWouldSleep;
    int64_t slice = kSleepSliceNs;
    if (const int64_t deadlineNs = deadline.ns(); deadlineNs != 0) {
      int64_t left = deadlineNs - monotonicNs();
      if (left <= 0) return WaitResult::kTimedOut;
      if (left < slice) slice = left;
    }
    if (sleepOn(word, sleeping, v, slice) == ETIMEDOUT) {
      // Acquire, as above: a return that landed as the slice ran out is still a return.
      if (seqIs(word.load(std::memory_order_acquire), seq)) return WaitResult::kReady;
      if (peerGone(liveFd)) return WaitResult::kPeerDied;
      if (deadline.passed()) return WaitResult::kTimedOut;
    }
  }
}

WaitResult waitForCall(std::atomic<uint32_t>& word, std::atomic<uint32_t>& sleeping, uint32_t lastSeq,
                       TransferMode mode, const std::atomic<bool>& stop, uint32_t* seq, Help help) noexcept {
  uint32_t spins = 0;
  int64_t idleSince = 0;
  for (;;) {
    // Acquire: pairs with the client's release in ring(); after it we may read the frame.
    uint32_t v = word.load(std::memory_order_acquire);
    // Acquire, after the word: if we saw stopWaiter's change we also see the flag set before it.
    if (stop.load(std::memory_order_acquire)) return WaitResult::kStopped;
    if (v != lastSeq) {
      *seq = v;
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
      if (help.fn != nullptr && spins % kHelpEvery == 0 && help.fn(help.context)) return WaitResult::kHelped;
      if (spins % kYieldEvery == 0) ::sched_yield();
      continue;
    }
    sleepOn(word, sleeping, v, -1);
    spins = 0;
    idleSince = 0;
  }
}

void stopWaiter(std::atomic<uint32_t>& word) noexcept {
  // Changing the value makes a futex_wait that has not started yet return at once; the wake
  // covers one already asleep. The sequence it leaves behind is never used: the thread exits.
  // Release: a waiter that sees the new value must also see the stop flag set before it.
  word.fetch_add(1, std::memory_order_release);
  futexWake(word);
}

}  // namespace detail
}  // namespace lrpc
