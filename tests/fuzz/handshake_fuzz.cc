// Fuzz target: the session handshake, and what a hostile client of the same uid can say after
// it, against a live Exporter in this process (its clerk, acceptor and server threads are the
// real ones). Each input is one connection: a Hello of any length and content, then up to 16
// operations: binding-protocol messages (well-formed or raw bytes, with or without an fd),
// segment requests, and calls rung on any A-stack with any procedure, argument tail length,
// flags and key (the out-of-band segment descriptor, from the client's side). The server must
// answer each with a reply, an error status or by ending the binding, and never crash or hang
// (a call unanswered for 5 s while the binding lives is a trap). The same Hello bytes also go
// through the network transport's Hello decoder.
//
// Input: byte 0 bit 0: make the Hello valid (magic, version, interface, procedure count) over
// the fuzzed bytes; bit 1: a valid mode byte. Bytes 1-2: the Hello's length (LE, at most 600),
// then its bytes. Then records [op][...]: op % 4 == 0: a Message (24 bytes) and its reply, an
// fd attached if op bit 4; 1: [n][n raw bytes]; 2: a call [astack][procedure][argTail u32]
// [argFlags][key ok?][16 frame bytes]; 3: kGrowArgs [astack][bytes u32].
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "runtime/astack.h"
#include "runtime/exporter.h"
#include "runtime/names.h"
#include "runtime/protocol.h"
#include "runtime/shm.h"
#include "runtime/transfer.h"
#include "tests/fuzz/fuzz_target.h"
#include "tests/integration/raw_client.h"
#include "tests/integration/test_service.h"
#include "transport/wire.h"

namespace lrpc::campaign {
namespace {

using lrpc::testing::connectToName;
using lrpc::testing::TestService;

// TestService without the handler that sleeps for as long as it is told.
Status fuzzDispatch(void* self, uint32_t procedure, ServerCall& call) noexcept {
  if (procedure == TestService::kSleepMs) return Status(Errc::kInvalidArgument, "not in the fuzzer");
  return TestService::dispatch(self, procedure, call);
}
constexpr InterfaceDescriptor kFuzzDescriptor = {"fuzz:TestService", TestService::kDescriptor.id,
                                                 TestService::kDescriptor.signatureHash, TestService::kProcedures,
                                                 TestService::kDescriptor.procedureCount, &fuzzDispatch};

// The server under test, made once per fuzzing process (a fuzz target has no other place to
// keep it), in a private directory.
struct Target {
  Target() {
    char tmpl[] = "/tmp/lrpc-fuzz-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) __builtin_trap();
    dir = tmpl;
    ExporterOptions o;
    o.dir = dir;
    o.maxOutOfBandBytes = 1u << 20;
    exporter.emplace(o);
    if (!exporter->add("svc", kFuzzDescriptor, static_cast<TestService::Server*>(&impl)).isOk()) __builtin_trap();
  }
  std::string dir;
  TestService::Server impl;
  std::optional<Exporter> exporter;
  RegionLayout layout = *RegionLayout::compute(kFuzzDescriptor);
};

Target& target() {
  static Target* t = new Target;  // never destroyed: libFuzzer may exit from any thread
  static const int cleanup = std::atexit([] {
    std::error_code ec;
    std::filesystem::remove_all(target().dir, ec);  // the sockets and lock files left behind
  });
  (void)cleanup;
  return *t;
}

class Reader {
 public:
  Reader(const uint8_t* d, size_t n) : d_(d), n_(n) {}
  bool more() const { return pos_ < n_; }
  uint8_t u8() { return pos_ < n_ ? d_[pos_++] : 0; }
  uint32_t u32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t{u8()} << (8 * i);
    return v;
  }
  void bytes(void* out, size_t n) {
    auto* o = static_cast<uint8_t*>(out);
    for (size_t i = 0; i < n; ++i) o[i] = u8();
  }

 private:
  const uint8_t* d_;
  size_t n_;
  size_t pos_ = 0;
};

OwnedFd connectTo(const std::string& dir) {
  OwnedFd sock = connectToName(dir, "svc");
  if (!sock.valid()) __builtin_trap();
  return sock;
}

// The reply to one request, or the end of the binding; false once the binding is gone.
bool awaitReply(int sock) {
  detail::Message reply{};
  OwnedFd fd;
  Status s = detail::recvMessage(sock, &reply, sizeof reply, &fd, 5'000);
  if (s.code() == Errc::kDeadlineExceeded) __builtin_trap();  // neither an answer nor a hang-up
  return s.isOk();
}

void run(Reader& in) {
  Target& t = target();
  uint8_t mode = in.u8();
  size_t helloLen = std::min<size_t>(in.u8() | (size_t{in.u8()} << 8), 600);
  std::vector<uint8_t> hello(std::max(helloLen, sizeof(detail::Hello)), 0);
  in.bytes(hello.data(), helloLen);
  (void)net::decodeHello(std::span<const std::byte>(reinterpret_cast<const std::byte*>(hello.data()), helloLen));
  if ((mode & 1) != 0) {
    detail::Hello h;
    std::memcpy(&h, hello.data(), sizeof h);
    h.magic = detail::kHelloMagic;
    h.version = kVersion;
    h.interfaceId = kFuzzDescriptor.id;
    h.signatureHash = kFuzzDescriptor.signatureHash;
    h.procedureCount = kFuzzDescriptor.procedureCount;
    if ((mode & 2) != 0) h.mode = h.mode % 3;
    std::memcpy(hello.data(), &h, sizeof h);
    helloLen = std::max(helloLen, sizeof h);
  }
  OwnedFd sock = connectTo(t.dir);
  if (!detail::sendMessage(sock.get(), hello.data(), helloLen).isOk()) return;
  detail::Welcome w{};
  OwnedFd regionFd;
  Status s = detail::recvMessage(sock.get(), &w, sizeof w, &regionFd, 5'000);
  if (s.code() == Errc::kDeadlineExceeded) __builtin_trap();
  if (!s.isOk() || w.status != 0) return;
  if (w.regionBytes != t.layout.regionBytes()) __builtin_trap();  // the server's own layout
  Result<SharedMemory> region = SharedMemory::adopt(std::move(regionFd), w.regionBytes);
  if (!region.isOk()) __builtin_trap();
  std::vector<uint32_t> seq(t.layout.astackCount(), 0);
  std::vector<bool> started(t.layout.astackCount(), false);

  for (int op = 0; op < 16 && in.more(); ++op) {
    uint8_t kind = in.u8();
    switch (kind % 4) {
      case 0: {
        detail::Message m;
        in.bytes(&m, sizeof m);
        OwnedFd fd;
        if ((kind & 0x10) != 0) fd.reset(::memfd_create("fuzz", MFD_CLOEXEC));
        if (!detail::sendMessage(sock.get(), &m, sizeof m, fd.get()).isOk() || !awaitReply(sock.get())) return;
        if (m.type == detail::MsgType::kStartThread && m.astack < started.size()) started[m.astack] = true;
        break;
      }
      case 1: {
        uint8_t raw[256];
        size_t n = in.u8();
        in.bytes(raw, n);
        if (!detail::sendMessage(sock.get(), raw, n).isOk() || !awaitReply(sock.get())) return;
        break;
      }
      case 2: {
        uint32_t index = in.u8() % t.layout.astackCount();
        uint32_t procedure = in.u8();
        uint32_t argTail = in.u32();
        uint8_t argFlags = in.u8();
        bool keyOk = (in.u8() & 1) != 0;
        if (!started[index]) {
          detail::Message m{detail::MsgType::kStartThread, index, 0, 0, {}};
          if (!detail::sendMessage(sock.get(), &m, sizeof m).isOk() || !awaitReply(sock.get())) return;
          started[index] = true;
        }
        auto* ctl = reinterpret_cast<AStackControl*>(region->data() + t.layout.astackOffset(index));
        in.bytes(reinterpret_cast<std::byte*>(ctl) + kControlBytes, 16);
        detail::storeOnce(ctl->key, keyOk ? w.key : w.key ^ (uint64_t{procedure} << 32 | 1));
        detail::storeOnce(ctl->procedure, procedure % 8 == 7 ? procedure : t.layout.procedureOf(index));
        detail::storeOnce(ctl->argTail, argTail);
        detail::storeOnce(ctl->argFlags, argFlags);
        uint32_t n = ++seq[index];
        detail::ring(ctl->callWord, ctl->serverSleeping, n);
        auto* ret = reinterpret_cast<ReturnControl*>(region->data() + t.layout.returnOffset(index));
        auto r = detail::waitForReturn(ret->returnWord, ret->clientSleeping, n, TransferMode::kBlock, sock.get(),
                                       detail::monotonicNs() + 5'000'000'000);
        if (r == detail::WaitResult::kTimedOut) __builtin_trap();
        if (r != detail::WaitResult::kReady) return;
        break;
      }
      case 3: {
        detail::Message m{detail::MsgType::kGrowArgs, in.u8() % (t.layout.astackCount() + 1), in.u32(), 0, {}};
        if (!detail::sendMessage(sock.get(), &m, sizeof m).isOk() || !awaitReply(sock.get())) return;
        break;
      }
    }
  }
}

}  // namespace
}  // namespace lrpc::campaign

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lrpc::campaign::Reader in(data, size);
  lrpc::campaign::run(in);
  return 0;
}
