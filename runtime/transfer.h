// Control transfer between a client thread and the server thread of an A-stack: two
// doorbells per A-stack (call and return), each a sequence word and, beside it in the same
// block, the waiter's "sleeping" flag. Every cross-process ordering point of the call path is
// in this file or transfer.cc.
//
// Publisher: a plain store of seq (release), a fence, then a read of the flag; FUTEX_WAKE only
// if it is set, so the fast path makes no system call and no locked instruction on the line
// the peer spins on. Waiter: spin on the word (acquire); to sleep, set the flag, fence,
// re-read the word and futex_wait on exactly the value it expects to change. Publisher and
// waiter each store, fence, then load the other's location (Dekker): at least one sees the
// other's store, so either the waiter does not sleep or the publisher wakes it. A publisher
// that spins on its answer may put the fence and the read after its spin (ringLater).
#pragma once

#include <sched.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "runtime/astack.h"

namespace lrpc {

// How a waiting side waits, chosen per import (the server threads of a binding use its mode).
enum class TransferMode : uint8_t {
  kAdaptive = 0,  // spin about kAdaptiveSpins pauses, then futex: the default; idle costs no CPU
  kSpin = 1,      // spin (the paper's LRPC/MP); yields now and then so an oversubscribed
                  // machine still makes progress; an idle server thread sleeps after kSpinIdleNs
  kBlock = 2,     // futex at once
};

std::string_view transferModeName(TransferMode mode) noexcept;

namespace detail {

// Pauses spent spinning before sleeping in adaptive mode: long enough that a call answered
// within a few microseconds never pays a sleeping wake-up, which costs tens of microseconds
// across cores on a virtual machine (bench/README.md compares the floors).
inline constexpr uint32_t kAdaptiveSpins = 1000;
// A client whose call streamed its argument tail (LocalCall::kStreamBytes or more) spins this
// many more pauses per KiB of tail before it sleeps: the server is copying that tail for this
// very call (at 1 GB/s or more, about 37 pauses per KiB), so the return is at most that copy
// away, and a sleep would add a cross-core wake-up to every bulk call (lrpc_bulk_bench's
// lrpc_sink shows the difference between adaptive and spinning bindings).
inline constexpr uint32_t kStreamSpinsPerKiB = 32;
constexpr uint32_t streamedSpins(uint64_t tailBytes) noexcept {
  uint64_t n = kAdaptiveSpins + (tailBytes >> 10) * kStreamSpinsPerKiB;
  return n < UINT32_MAX ? static_cast<uint32_t>(n) : UINT32_MAX;
}
// A spinning waiter calls sched_yield every this many pauses, so that the peer it waits for
// can run when both share a core.
inline constexpr uint32_t kYieldEvery = 128;
// A spinning client checks liveness (poll for POLLHUP) and its deadline every this many pauses.
inline constexpr uint32_t kCheckEvery = 4096;
// A blocked client wakes this often to check liveness and its deadline.
inline constexpr int64_t kSleepSliceNs = 5'000'000;
// A spin-mode server thread with no call for this long goes to sleep on its futex.
inline constexpr int64_t kSpinIdleNs = 50'000'000;

inline void cpuRelax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Lines past this many bytes are not demoted: a bulk copy runs faster with its lines left
// where they are (a throwaway two-thread test of 1 MiB copies: 17-25% of memcpy with cldemote,
// 40-60% without).
inline constexpr size_t kDemoteMaxBytes = 1024;

// Runs `hint` on each cache line of [block + 64, block + min(n, cap)): the lines of a call or
// return block past its doorbell's, which the two hints below treat alike.
template <class Hint>
inline void eachLineAfterFirst(const void* block, size_t n, size_t cap, Hint hint) noexcept {
  const auto* p = static_cast<const std::byte*>(block);
  if (n > cap) n = cap;
  for (size_t off = kCacheLine; off < n; off += kCacheLine) hint(p + off);
}

// After a doorbell: hints that the lines of [block + 64, block + n), written by this side for
// the peer, move from this core's private caches to the shared last-level cache, so that the
// peer's reads hit there instead of snooping ours. `block` (the call or return block) opens a
// cache line; that first line is left alone, as the peer's spinning read fetches it at once
// anyway. Demoting the doorbell's own line would gain nothing for the same reason.
// CLDEMOTE lies in the reserved-NOP opcode space: a CPU without it executes a NOP.
inline void demoteAfterFirstLine(const void* block, size_t n) noexcept {
#if defined(__x86_64__)
  eachLineAfterFirst(block, n, kDemoteMaxBytes, [](const std::byte* line) { asm volatile("cldemote (%0)" : : "r"(line) : "memory"); });
#else
  (void)block;
  (void)n;
#endif
}

// Lines past this many bytes are not prefetched: a larger argument streams in through the
// hardware's own prefetcher as the server copies it.
inline constexpr size_t kPrefetchMaxBytes = 512;

// On a doorbell: starts fetching the lines of [block + 64, block + n), written by the peer for
// this side, before the work that comes before reading them (the claim, whose locked
// instruction holds back every load after it, and the dispatch), so that their cross-core
// misses overlap that work instead of following it. The first line is the doorbell's own,
// here already.
inline void prefetchAfterFirstLine(const void* block, size_t n) noexcept {
  eachLineAfterFirst(block, n, kPrefetchMaxBytes, [](const std::byte* line) { __builtin_prefetch(line, 0, 3); });
}

int64_t monotonicNs() noexcept;
// CLOCK_MONOTONIC_COARSE: a resolution of a few ms for a few ns a read, for timeouts of seconds
// that are looked at on every datagram.
int64_t coarseMonotonicNs() noexcept;
// Waits until a count of final bytes that the peer raises as it writes a streamed tail
// (LocalCall's argument tail, or a streamed result) reaches `end`. `ready` holds the last count
// seen, read no higher than `cap` (the tail's length: the peer's word is never trusted beyond
// it) and never moving back. Spins, yields now and then for a writer that may share the core,
// and every kCheckEvery pauses asks `giveUp()` (not ok: the wait ends with that status) and
// whether the count has stood still for kStreamStallNs (then kBadFrame with `stalled`).
template <class GiveUp>
Status awaitStreamCount(const std::atomic<uint32_t>& count, uint32_t cap, size_t end, uint32_t& ready, GiveUp giveUp,
                        const char* stalled) noexcept {
  uint32_t spins = 0;
  uint32_t lastSeen = ready;
  int64_t stalledSince = 0;
  for (;;) {
    // Acquire: pairs with the writer's release after it wrote the bytes it counts.
    const uint32_t seen = count.load(std::memory_order_acquire);
    const uint32_t v = seen < cap ? seen : cap;
    if (v > ready) ready = v;
    if (ready >= end) return {};
    cpuRelax();
    if (++spins % kYieldEvery == 0) ::sched_yield();
    if (spins % kCheckEvery != 0) continue;
    if (Status s = giveUp(); !s.isOk()) return s;
    const int64_t now = monotonicNs();
    if (v != lastSeen || stalledSince == 0) {
      lastSeen = v;
      stalledSince = now;
    } else if (now - stalledSince > kStreamStallNs) {
      return Status(Errc::kBadFrame, stalled);
    }
  }
}

// A call's deadline, read off the clock only when something first needs it: a call that
// returns while its caller spins never reads the clock (a read costs about 16 ns here, 5% of a
// Null call). A caller that would let time pass before the first need (running a callback)
// fixes it first with ns().
class LazyDeadline {
 public:
  // `timeoutNs` from the first ns(); 0 or less: none.
  static LazyDeadline after(int64_t timeoutNs) noexcept { return LazyDeadline(timeoutNs, 0); }
  // A deadline already fixed, monotonic ns; 0: none.
  static LazyDeadline at(int64_t deadlineNs) noexcept { return LazyDeadline(0, deadlineNs); }
  // The deadline in monotonic ns (0: none), fixed by the first call.
  int64_t ns() noexcept {
    if (timeoutNs_ > 0) {
      deadlineNs_ = monotonicNs() + timeoutNs_;
      timeoutNs_ = 0;
    }
    return deadlineNs_;
  }
  bool passed() noexcept {
    const int64_t d = ns();
    return d != 0 && monotonicNs() >= d;
  }

 private:
  LazyDeadline(int64_t timeoutNs, int64_t deadlineNs) noexcept : timeoutNs_(timeoutNs), deadlineNs_(deadlineNs) {}
  int64_t timeoutNs_;
  int64_t deadlineNs_;
};

void futexWake(std::atomic<uint32_t>& word) noexcept;
// Returns 0 when woken (or the value differed), ETIMEDOUT, or EINTR. timeoutNs < 0: forever.
int futexWait(std::atomic<uint32_t>& word, uint32_t expected, int64_t timeoutNs) noexcept;

// Publishes call (or return) `seq` on a doorbell whose waiter announces its sleep in
// `sleeping`. A plain store rather than an exchange: a locked instruction on the line the peer
// spins on holds that line longer than a store followed by a fence does.
// ring() is announce() then wakeSleeper(): a doorbell that may skip the wake (a callback run by
// its waiting caller, LocalBinding::ringReverse) reads its own words between the two.
inline void announce(std::atomic<uint32_t>& word, uint32_t seq) noexcept {
  // Release: the peer must see the frame and control fields we wrote before it sees seq.
  word.store(seq, std::memory_order_release);
  // Seq_cst fence: our store of seq is ordered before our load of the flag, as the waiter's
  // store of the flag is before its re-load of the word (sleepOn): one of us sees the other.
  std::atomic_thread_fence(std::memory_order_seq_cst);
}
inline void wakeSleeper(std::atomic<uint32_t>& word, const std::atomic<uint32_t>& sleeping) noexcept {
  // Relaxed: after announce()'s fence.
  if (sleeping.load(std::memory_order_relaxed) != 0) futexWake(word);
}
inline void ring(std::atomic<uint32_t>& word, const std::atomic<uint32_t>& sleeping, uint32_t seq) noexcept {
  announce(word, seq);
  wakeSleeper(word, sleeping);
}

// ring() in two halves, for a publisher that spins on its answer right after (LocalCall::invoke):
// the fence then stalls the caller until its store has left, which at a fast placement put
// about 14 ns on a Null call's round trip (measured against floor_spin). ringLater() stores
// and looks at the flag once without the fence, which wakes a waiter that had gone to sleep
// before; it returns true when the publisher must still call ringNow() before it stops
// spinning: the Dekker half, which makes a waiter that went to sleep as we rang impossible to
// miss. Not a look on every spin: reading the doorbell's line while the peer fetches it
// slowed a Null call by 17 ns.
inline bool ringLater(std::atomic<uint32_t>& word, const std::atomic<uint32_t>& sleeping, uint32_t seq) noexcept {
  // Release: the peer must see the frame and control fields we wrote before it sees seq.
  word.store(seq, std::memory_order_release);
  // Relaxed: a first look only; a waiter that sets its flag as we look is ringNow()'s.
  if (sleeping.load(std::memory_order_relaxed) == 0) return true;
  futexWake(word);
  return false;
}
inline void ringNow(std::atomic<uint32_t>& word, const std::atomic<uint32_t>& sleeping) noexcept {
  // Seq_cst fence: our store of seq (ringLater) is ordered before our load of the flag, as in
  // announce().
  std::atomic_thread_fence(std::memory_order_seq_cst);
  wakeSleeper(word, sleeping);
}

inline bool seqIs(uint32_t word, uint32_t seq) noexcept { return word == seq; }

// Timestamps of the points where a call changes hands, for bench/timeline.py: where a round
// trip's time goes, call by call and process by process. A benchmark's mean per call hides a
// difference of a few ns under the handoff's own spread; per-call stamps on the shared TSC do
// not. Compiled in only with -DLRPC_TIMELINE=ON (bench/README.md, "Timeline"); otherwise a
// mark is nothing. The floor_spin points are the raw floor's (bench/floors.cc).
enum class Mark : uint32_t {
  kClientRing = 0,     // a client is about to ring the call doorbell
  kClientReturn = 1,   // it has seen the return
  kServerCall = 2,     // a server thread has seen the call
  kServerReturn = 3,   // it is about to ring the return doorbell
  kFloorClientRing = 10,
  kFloorClientReturn = 11,
  kFloorServerCall = 12,
  kFloorServerReturn = 13,
};
#if defined(LRPC_TIMELINE)
void timelineRecord(Mark mark, uint32_t seq) noexcept;
inline void timeline(Mark mark, uint32_t seq) noexcept { timelineRecord(mark, seq); }
#else
inline void timeline(Mark, uint32_t) noexcept {}
#endif

// kWouldSleep: a waiter that helps (below) reached the point where it would sleep.
enum class WaitResult : uint8_t { kReady, kTimedOut, kPeerDied, kStopped, kHelped, kWouldSleep };

// What a spinning waiter does while its doorbell is silent: serve a call that waits on
// another A-stack of its binding (a server thread, Connection::help), or a callback that its
// own call caused (a client, LocalBinding::waitReturnAsGuest). True if it served one.
struct Help {
  bool (*fn)(void*) = nullptr;
  void* context = nullptr;
};

// Client: waits until the return doorbell carries `seq`. liveFd is the binding's socket
// (POLLHUP = the server died); the deadline is monotonic ns, 0 for none.
// In adaptive mode it spins `adaptiveSpins` pauses before it sleeps. With `help`, it runs help
// at every pause (a callback is part of its own call's latency), checks the deadline after
// each one served, and returns kWouldSleep instead of sleeping: the caller stops helping first.
WaitResult waitForReturn(std::atomic<uint32_t>& word, std::atomic<uint32_t>& sleeping, uint32_t seq, TransferMode mode,
                         int liveFd, LazyDeadline& deadline, uint32_t adaptiveSpins = kAdaptiveSpins,
                         Help help = {}) noexcept;
inline WaitResult waitForReturn(std::atomic<uint32_t>& word, std::atomic<uint32_t>& sleeping, uint32_t seq,
                                TransferMode mode, int liveFd, int64_t deadlineNs,
                                uint32_t adaptiveSpins = kAdaptiveSpins, Help help = {}) noexcept {
  LazyDeadline deadline = LazyDeadline::at(deadlineNs);
  return waitForReturn(word, sleeping, seq, mode, liveFd, deadline, adaptiveSpins, help);
}
// A spinning server thread looks for other A-stacks' calls every this many pauses. Often:
// with more A-stacks busy than the server has cores, a call waits until a running thread
// looks, so the per-call time of many calls in flight on one server core grows with this
// number (Null/lrpc_async in bench/ shows it).
inline constexpr uint32_t kHelpEvery = 2;

// Server: waits until the call doorbell carries a sequence other than `lastSeq` (returned in
// *seq), or `stop` is set (the binding is going away; whoever sets it then bumps the word and
// wakes it, see stopWaiter). While it spins it runs `help` every kHelpEvery pauses, and
// returns kHelped when that served a call (the caller waits again, on whichever A-stack it
// serves now, its idle time started over).
WaitResult waitForCall(std::atomic<uint32_t>& word, std::atomic<uint32_t>& sleeping, uint32_t lastSeq,
                       TransferMode mode, const std::atomic<bool>& stop, uint32_t* seq, Help help = {}) noexcept;

// Makes a waitForCall on `word` return: the caller has already set its stop flag.
void stopWaiter(std::atomic<uint32_t>& word) noexcept;

// True if the peer's end of the socket has hung up (or the socket failed).
bool peerGone(int fd) noexcept;

}  // namespace detail
}  // namespace lrpc
