// The A-stack region: the shared-memory ABI between one client process and one server
// process of a binding (one memfd per binding). runtime/astack_format.md is the prose
// version with a diagram; the static_asserts below pin every field.
//
// Neither side trusts offsets or sizes stored in shared memory: both compute the same
// RegionLayout privately from their own PDL (the interface id and signature hash were
// checked at bind time), and the region holds only the per-call control fields.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/contract.h"

namespace lrpc {

// Not included: stub_support.h includes this header (through local_call.h).
struct InterfaceDescriptor;

inline constexpr uint32_t kRegionMagic = 0x4350524c;  // "LRPC" in memory order
inline constexpr uint32_t kCacheLine = 64;
// Bytes of each of the two control blocks of an A-stack: the call block opens its first cache
// line (the arguments follow it), the return block opens a later line (the results follow it).
// A call with up to 32 bytes of arguments moves one line to the server, and a result of up to
// 32 bytes one line back; the client only writes the call lines and the server only the return
// lines, so neither side's stores fight the other side's spinning reads.
inline constexpr uint32_t kControlBytes = 32;
// Every A-stack has at least this much room from its results on, where a failing call's
// detail text goes: all that may cross (kMaxWireDetail).
inline constexpr uint32_t kMinErrorBytes = kMaxWireDetail;
// Bounds on what a PDL may ask for; a descriptor beyond them is refused at bind time.
inline constexpr uint32_t kMaxAStacksPerBinding = 4096;
inline constexpr uint32_t kMaxAStackBytes = 1u << 20;
inline constexpr uint64_t kMaxRegionBytes = uint64_t{256} << 20;

// Flag bits of AStackControl::argFlags / resultFlags.
inline constexpr uint8_t kTailOutOfBand = 1;  // the tail is in the A-stack's out-of-band segment
// With kTailOutOfBand in argFlags: the call was published before its argument tail was all
// written; AStackControl::argReady says how much of it is final (astack_format.md, "Streaming").
inline constexpr uint8_t kTailStreaming = 2;
// In argFlags only: the client reads the result tail through LocalCall::takeResultBytes alone
// (its one variable-size result is Data), so the server may stream a large one. With
// kTailOutOfBand in resultFlags, kTailStreaming then says the return was published before the
// result tail was all written; ReturnControl::resultReady says how much of it is final.
inline constexpr uint8_t kResultStreamable = 4;
// A tail at least this long is streamed (arguments: always; results: where the client allows
// it), kStreamChunk bytes at a time, so that the writer's and the reader's copies overlap.
inline constexpr size_t kStreamBytes = 256 * 1024;
inline constexpr size_t kStreamChunk = 64 * 1024;
// A stream whose count makes no progress for this long ends its call with kBadFrame: a live
// peer that stops writing must not hold the reader forever.
inline constexpr int64_t kStreamStallNs = 1'000'000'000;

// The first 64 bytes of the region, written once by the server before it sends the memfd.
struct RegionHeader {
  uint32_t magic;
  uint32_t version;
  uint64_t interfaceId;
  uint64_t signatureHash;
  uint32_t astackCount;
  uint32_t reserved0;
  uint64_t regionBytes;
  uint8_t reserved[24];
};
static_assert(sizeof(RegionHeader) == kCacheLine);
static_assert(std::is_trivially_copyable_v<RegionHeader>);
static_assert(offsetof(RegionHeader, interfaceId) == 8 && offsetof(RegionHeader, astackCount) == 24 &&
              offsetof(RegionHeader, regionBytes) == 32);

// The call block: the first kControlBytes of each A-stack (cache-line aligned). Written by the
// client, read once per call by the server (astack_format.md, "Ownership handoff").
struct AStackControl {
  std::atomic<uint32_t> callWord;    // client -> server doorbell: the call's sequence number
  uint32_t procedure;                // PDL index; must match the A-stack's own procedure
  uint64_t key;                      // the binding's key, checked by the server on every call
  uint32_t argTail;                  // bytes of argument tail (inline or out of band)
  uint8_t argFlags;                  // kTailOutOfBand, kTailStreaming, kResultStreamable
  uint8_t reserved;
  // A callback binding's call only (runtime/callbacks.h): 1 + the index of the caller's
  // A-stack whose call this callback serves, so that the thread waiting for that call may run
  // it; 0 for a callback no waiting call caused. Untrusted, like every field here.
  uint16_t origin;
  std::atomic<uint32_t> argReady;    // kTailStreaming: the first argReady tail bytes are final
  std::atomic<uint32_t> serverSleeping;  // 1 while the server thread sleeps (or is about to) on callWord
};
static_assert(sizeof(AStackControl) == kControlBytes);
static_assert(std::atomic<uint32_t>::is_always_lock_free, "futex words must be plain 32-bit words");
static_assert(sizeof(std::atomic<uint32_t>) == 4);
static_assert(offsetof(AStackControl, procedure) == 4 && offsetof(AStackControl, key) == 8 &&
              offsetof(AStackControl, argTail) == 16 && offsetof(AStackControl, argFlags) == 20 &&
              offsetof(AStackControl, origin) == 22 &&
              offsetof(AStackControl, argReady) == 24 && offsetof(AStackControl, serverSleeping) == 28);

// The return block: kControlBytes at the start of an A-stack's return line (frame offset
// ProcedureLayout::returnOff), followed by the results. Written by the server, read by the client.
struct ReturnControl {
  std::atomic<uint32_t> returnWord;  // server -> client doorbell: the sequence number of the call returned
  uint32_t resultTail;               // bytes of result tail; on error: bytes of detail text
  uint8_t status;                    // Errc of the call, written by the server
  uint8_t resultFlags;               // kTailOutOfBand, kTailStreaming
  uint8_t reserved[2];
  std::atomic<uint32_t> clientSleeping;  // 1 while the client sleeps (or is about to) on returnWord
  // Client -> server: the sequence number of a call the client gave up (cancelled, or past its
  // deadline) while its handler may run; 0 for none. A hint for the handler (callCancelled()).
  std::atomic<uint32_t> cancelWord;
  // Client -> server: the sequence number of the call whose thread is waiting for it and runs
  // the callbacks it causes meanwhile (a binding that passed callbacks); 0 when nobody does.
  std::atomic<uint32_t> guestSeq;
  // Server -> client: a callback of this client's (its id in the client's table) that the
  // handler dropped, released by the client as it reads the return; 0 for none.
  uint32_t releasedId;
  // Server -> client, a streamed result tail only: its first resultReady bytes are final.
  std::atomic<uint32_t> resultReady;
};
static_assert(sizeof(ReturnControl) == kControlBytes);
static_assert(offsetof(ReturnControl, resultTail) == 4 && offsetof(ReturnControl, status) == 8 &&
              offsetof(ReturnControl, resultFlags) == 9 && offsetof(ReturnControl, clientSleeping) == 12 &&
              offsetof(ReturnControl, cancelWord) == 16 && offsetof(ReturnControl, guestSeq) == 20 &&
              offsetof(ReturnControl, releasedId) == 24 && offsetof(ReturnControl, resultReady) == 28);

// Where one procedure's A-stacks and the parts of their frames lie. Frame offsets are
// relative to the frame, which starts kControlBytes into the A-stack.
struct ProcedureLayout {
  uint32_t firstAStack;   // global index of this procedure's first A-stack
  uint32_t count;         // A-stacks of this procedure
  uint64_t firstOffset;   // region offset of the first A-stack
  uint32_t stride;        // bytes per A-stack (control + frame), a multiple of kCacheLine
  uint32_t argsSize;      // fixed argument part, at frame offset 0
  uint32_t argTailOff;    // inline argument tail
  uint32_t tailRoom;      // bytes of inline tail room, each direction
  uint32_t returnOff;     // the ReturnControl, at the start of a cache line of the A-stack
  uint32_t resultsOff;    // fixed result part, right after the ReturnControl
  uint32_t resultsSize;
  uint32_t resultTailOff; // inline result tail
  uint32_t frameBytes;    // the whole frame area (at least resultsOff + kMinErrorBytes)
};

// The layout of a binding's region, derived from a PDL alone.
class RegionLayout {
 public:
  // Fails with kInvalidArgument when the PDL is malformed or asks for too much.
  static Result<RegionLayout> compute(const InterfaceDescriptor& iface);

  uint64_t regionBytes() const noexcept { return regionBytes_; }
  uint32_t astackCount() const noexcept { return static_cast<uint32_t>(procOfAStack_.size()); }
  uint32_t procedureCount() const noexcept { return static_cast<uint32_t>(procs_.size()); }
  const ProcedureLayout& procedure(uint32_t p) const noexcept { return procs_[p]; }
  // The procedure A-stack `i` belongs to (i < astackCount()).
  uint32_t procedureOf(uint32_t i) const noexcept { return procOfAStack_[i]; }
  uint64_t astackOffset(uint32_t i) const noexcept {
    const ProcedureLayout& p = procs_[procOfAStack_[i]];
    return p.firstOffset + uint64_t{i - p.firstAStack} * p.stride;
  }
  // Region offset of A-stack `i`'s ReturnControl.
  uint64_t returnOffset(uint32_t i) const noexcept {
    return astackOffset(i) + kControlBytes + procs_[procOfAStack_[i]].returnOff;
  }

 private:
  RegionLayout() = default;
  std::vector<ProcedureLayout> procs_;
  std::vector<uint32_t> procOfAStack_;
  uint64_t regionBytes_ = 0;
};

namespace detail {
// Reads a field of shared memory exactly once (the compiler may not re-load it later), so
// that a value is checked and used as the same value even if the peer rewrites it.
template <class T>
inline T loadOnce(const T& field) noexcept {
  return __atomic_load_n(&field, __ATOMIC_RELAXED);
}
template <class T>
inline void storeOnce(T& field, T value) noexcept {
  __atomic_store_n(&field, value, __ATOMIC_RELAXED);
}
}  // namespace detail

}  // namespace lrpc
