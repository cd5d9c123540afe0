// Control transfer between a client thread and the server thread of an A-stack: two
// doorbell words per A-stack (call and return), each "seq << 1 | sleeping". Every
// cross-process ordering point of the call path is in this file or transfer.cc.
//
// Publisher: exchange(seq << 1, release); FUTEX_WAKE only if the old value had the
// sleeping bit, so the fast path makes no system call. Waiter: spin on the word (acquire);
// to sleep, CAS the sleeping bit in and futex_wait on exactly that value, so a publish that
// lands in between changes the word and the wait returns at once (no lost wake-up).
#pragma once

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

// Pauses spent spinning before sleeping in adaptive mode (peers.md: ~1000 pauses gets within
// 5% of the spin floor).
inline constexpr uint32_t kAdaptiveSpins = 1000;
// A client whose call streamed its argument tail (LocalCall::kStreamBytes or more) spins this
// many more pauses per KiB of tail before it sleeps: the server is copying that tail for this
// very call (at 1 GB/s or more, about 37 pauses per KiB), so the return is at most that copy
// away, and a sleep would add a cross-core wake-up to every bulk call (40-60 us here, more
// while the host is busy: lrpc_sink at 1 MiB made 6.1-6.4 GB/s adaptive against 8.0-8.5
// spinning in one run).
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

// After a doorbell: hints that the lines of [block + 64, block + n), written by this side for
// the peer, move from this core's private caches to the shared last-level cache, so that the
// peer's reads hit there instead of snooping ours. `block` (the call or return block) opens a
// cache line; that first line is left alone, as the peer's spinning read fetches it at once
// anyway. In a throwaway two-process spin ping-pong on this VM, a 200-byte call took 10-15%
// less with its three further lines demoted, and demoting the doorbell's line changed nothing.
// CLDEMOTE lies in the reserved-NOP opcode space: a CPU without it executes a NOP.
inline void demoteAfterFirstLine(const void* block, size_t n) noexcept {
#if defined(__x86_64__)
  const auto* p = static_cast<const std::byte*>(block);
  if (n > kDemoteMaxBytes) n = kDemoteMaxBytes;
  for (size_t off = kCacheLine; off < n; off += kCacheLine) asm volatile("cldemote (%0)" : : "r"(p + off) : "memory");
#else
  (void)block;
  (void)n;
#endif
}

int64_t monotonicNs() noexcept;
void futexWake(std::atomic<uint32_t>& word) noexcept;
// Returns 0 when woken (or the value differed), ETIMEDOUT, or EINTR. timeoutNs < 0: forever.
int futexWait(std::atomic<uint32_t>& word, uint32_t expected, int64_t timeoutNs) noexcept;

// Publishes call `seq` on a doorbell.
inline void ring(std::atomic<uint32_t>& word, uint32_t seq) noexcept {
  // Release: the peer must see the frame and control fields we wrote before it sees seq.
  uint32_t old = word.exchange((seq & kSeqMask) << 1, std::memory_order_release);
  if (old & kDoorbellSleeping) futexWake(word);
}

inline bool seqIs(uint32_t word, uint32_t seq) noexcept { return (word >> 1) == (seq & kSeqMask); }

enum class WaitResult : uint8_t { kReady, kTimedOut, kPeerDied, kStopped };

// Client: waits until the return doorbell carries `seq`. liveFd is the binding's socket
// (POLLHUP = the server died); deadlineNs is monotonic, 0 for none.
// In adaptive mode it spins `adaptiveSpins` pauses before it sleeps.
WaitResult waitForReturn(std::atomic<uint32_t>& word, uint32_t seq, TransferMode mode, int liveFd,
                         int64_t deadlineNs, uint32_t adaptiveSpins = kAdaptiveSpins) noexcept;

// Server: waits until the call doorbell carries a sequence other than `lastSeq` (returned in
// *seq), or `stop` is set (the binding is going away; whoever sets it then bumps the word and
// wakes it, see stopWaiter).
WaitResult waitForCall(std::atomic<uint32_t>& word, uint32_t lastSeq, TransferMode mode,
                       const std::atomic<bool>& stop, uint32_t* seq) noexcept;

// Makes a waitForCall on `word` return: the caller has already set its stop flag.
void stopWaiter(std::atomic<uint32_t>& word) noexcept;

// True if the peer's end of the socket has hung up (or the socket failed).
bool peerGone(int fd) noexcept;

}  // namespace detail
}  // namespace lrpc
