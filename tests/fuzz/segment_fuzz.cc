// Fuzz target: the out-of-band segment descriptors a client is handed by a hostile server.
// A real LocalBinding (the client side of a same-host binding) is built over a region and a
// socket that the fuzzer controls; each call finds, already waiting for it, the server's side
// of the story: the thread-started reply, an argument segment (kArgSegment, any size, any
// memfd size, sealed or not), a result segment (kResultSegment, for any A-stack), and a
// published return whose status, result tail length, flags and frame bytes are fuzzed. The
// client must answer with a value or an error, and never read outside what it mapped.
// (The server's side of the same descriptors, a hostile client, is handshake_fuzz.cc.)
//
// Input: records of 24 bytes (fewer at the end are zero-padded), at most 8, one call each:
//   0  u8  what: bit 0 big argument (out of band), bit 1 send an argument segment,
//          bit 2 send a result segment, bit 3 seal the segments, bit 4 segment for another
//          A-stack, bit 5 thread-start refused, bit 6 skip the return doorbell (the call
//          then waits for its deadline)
//   1  u8  status of the return
//   2  u8  resultFlags
//   3  u8  thread-started status
//   4  u32 resultTail
//   8  u32 argument segment bytes (claimed), 12 u32 its real memfd size (both capped)
//  16  u32 result segment bytes (claimed),   20 u32 its real memfd size
// The results part of the frame is filled from the record's bytes too.
#include "tests/fuzz/fuzz_target.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "runtime/astack.h"
#include "runtime/local_binding.h"
#include "runtime/protocol.h"
#include "runtime/shm.h"
#include "tests/integration/test_service.h"

namespace lrpc::campaign {
namespace {

using lrpc::testing::TestService;

constexpr uint32_t kCap = 1u << 20;  // memfds the harness makes stay small

uint32_t u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// A memfd of `size` bytes, sealed like the server's own (or not, when `seal` is false).
OwnedFd makeSegment(uint32_t size, bool seal) {
  OwnedFd fd(::memfd_create("fuzz-segment", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid()) return fd;
  if (::ftruncate(fd.get(), size) != 0) return OwnedFd();
  if (seal) (void)::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  return fd;
}

// Makes one call through `lb`, with everything the server would send already queued.
void oneCall(LocalBinding& lb, int serverEnd, const uint8_t* rec) {
  uint8_t what = rec[0];
  const RegionLayout& layout = lb.layout();
  uint32_t index = layout.procedure(TestService::kEcho).firstAStack;
  uint32_t other = (what & 0x10) != 0 ? (index + 1 + rec[3]) % (layout.astackCount() + 2) : index;

  // What the server "sent" before the return: read by the client in whatever order it wants.
  detail::Message started{detail::MsgType::kThreadStarted, index, 0, static_cast<uint8_t>((what & 0x20) ? rec[3] : 0), {}};
  (void)detail::sendMessage(serverEnd, &started, sizeof started);
  bool seal = (what & 0x08) != 0;
  // A big argument always gets a segment for its own A-stack (else the client would wait for
  // the clerk's reply until its 10 s limit); bit 1 adds one for `other`.
  for (uint32_t target : {index, other}) {
    if (target == index ? (what & 0x01) == 0 : (what & 0x02) == 0) continue;
    detail::Message m{detail::MsgType::kArgSegment, target, u32(rec + 8) % (4 * kCap), 0, {}};
    OwnedFd fd = makeSegment(u32(rec + 12) % kCap, seal);
    (void)detail::sendMessage(serverEnd, &m, sizeof m, fd.get());
  }
  if ((what & 0x04) != 0) {
    detail::Message m{detail::MsgType::kResultSegment, other, u32(rec + 16) % (4 * kCap), 0, {}};
    OwnedFd fd = makeSegment(u32(rec + 20) % kCap, seal);
    (void)detail::sendMessage(serverEnd, &m, sizeof m, fd.get());
  }

  // The published return, prepared before the call: the client sees it at its first look.
  ReturnControl* ret = lb.returnControl(index);
  const ProcedureLayout& pl = layout.procedure(TestService::kEcho);
  std::byte* frame = reinterpret_cast<std::byte*>(lb.control(index)) + kControlBytes;
  std::memcpy(frame + pl.resultsOff, rec, std::min<size_t>(24, pl.frameBytes - pl.resultsOff));
  detail::storeOnce(ret->status, rec[1]);
  detail::storeOnce(ret->resultFlags, rec[2]);
  detail::storeOnce(ret->resultTail, u32(rec + 4));
  uint32_t seq = lb.slot(index).seq + 1;
  if ((what & 0x40) == 0) ret->returnWord.store(seq, std::memory_order_release);

  TestService::Client client(std::make_shared<Binding>(TestService::kDescriptor, &lb, nullptr));
  CallOptions quick;
  quick.timeout = std::chrono::milliseconds(1);
  size_t n = (what & 0x01) != 0 ? 70'000 : 16;
  Result<std::vector<uint8_t>> r = client.withOptions(quick).echo(std::vector<uint8_t>(n, 0x42));
  if (r.isOk() && r->size() > pl.tailRoom && r->size() > kCap * 4) __builtin_trap();  // bounded by what was mapped
}

}  // namespace
}  // namespace lrpc::campaign

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lrpc;
  static const Result<RegionLayout> layout = RegionLayout::compute(lrpc::testing::TestService::kDescriptor);
  if (!layout.isOk()) __builtin_trap();
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return 0;
  OwnedFd clientEnd(sv[0]), serverEnd(sv[1]);
  Result<SharedMemory> region = SharedMemory::create("fuzz-region", layout->regionBytes());
  if (!region.isOk()) return 0;
  LocalBinding lb(lrpc::testing::TestService::kDescriptor, *layout, std::move(*region), std::move(clientEnd),
                  0x1234, TransferMode::kSpin, std::chrono::milliseconds(1));
  uint8_t rec[24];
  for (size_t pos = 0, calls = 0; pos < size && calls < 8; pos += 24, ++calls) {
    std::memset(rec, 0, sizeof rec);
    std::memcpy(rec, data + pos, std::min<size_t>(24, size - pos));
    lrpc::campaign::oneCall(lb, serverEnd.get(), rec);
    // A call that gave up keeps its A-stack out of the pool: later calls would use another.
    if (lb.dead() || (rec[0] & 0x40) != 0) break;
  }
  return 0;
}
