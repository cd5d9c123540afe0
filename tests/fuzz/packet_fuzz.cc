#include "tests/fuzz/packet_fuzz.h"

#include <cstring>
#include <vector>

#include "tests/transport/test_service.h"
#include "transport/fragment.h"
#include "transport/loopback.h"
#include "transport/server.h"
#include "transport/wire.h"

namespace lrpc::net {
namespace {

// The test service minus the handlers that sleep (a fuzzer would find the long sleeps).
Status fuzzDispatch(void* self, uint32_t procedure, ServerCall& call) noexcept {
  if (procedure == testing::Svc::kSlow || procedure == testing::Svc::kSlowToken) {
    return Status(Errc::kInvalidArgument, "not in the fuzzer");
  }
  return testing::Svc::dispatch(self, procedure, call);
}

constexpr InterfaceDescriptor kFuzzDescriptor = {"fuzz:Svc", testing::Svc::kDescriptor.id,
                                                 testing::Svc::kDescriptor.signatureHash, testing::Svc::kProcedures,
                                                 testing::Svc::kCount, &fuzzDispatch};

struct Drain final : DatagramSink {
  void onDatagram(const Datagram& d) noexcept override {
    // Whatever the server says must itself decode (the server never sends garbage).
    auto p = decodePacket(d.bytes);
    if (!p.isOk()) __builtin_trap();
    if (p->type() == PacketType::kWelcome && p->header.status == 0) {
      auto w = decodeWelcome(p->payload);
      if (w.isOk()) {
        session = p->header.session;
        cookie = w->cookie;
      }
    }
  }
  uint32_t session = 0;
  uint64_t cookie = 0;
};

// Every decoder on its own, on the raw bytes.
void decodeAll(std::span<const std::byte> bytes) {
  auto p = decodePacket(bytes);
  (void)decodeHello(bytes);
  (void)decodeAck(bytes);
  (void)decodeWelcome(bytes);
  if (!p.isOk()) return;
  (void)decodeHello(p->payload);
  (void)decodeAck(p->payload);
  if ((p->header.flags & kFlagFragment) != 0 && p->header.total <= (1u << 20)) {
    MessageBuffer dest;
    Reassembly r;
    if (r.begin(p->header.total, 96 + p->header.procedure % 1400, dest).isOk()) {
      (void)r.accept(p->header, p->payload);
      (void)r.ack();
    }
  }
}

}  // namespace
}  // namespace lrpc::net

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lrpc;
  using namespace lrpc::net;
  auto net = std::make_shared<LoopbackNetwork>();
  testing::Svc::Impl impl;
  ServerOptions so;
  so.maxMessageBytes = 1 << 20;
  so.window = 4;
  UdpServer server(so);
  if (!server.add("svc", kFuzzDescriptor, &impl).isOk()) __builtin_trap();
  auto serverEp = net->open(7000);
  NetAddress serverAddr = serverEp->localAddress();
  server.attach(std::move(serverEp));
  auto client = net->open(0);
  auto other = net->open(0);

  // A real handshake first, so that inputs can reach the session's state machine.
  HelloBody hb{};
  hb.ifaceId = kFuzzDescriptor.id;
  hb.signatureHash = kFuzzDescriptor.signatureHash;
  hb.window = 4;
  hb.maxDatagram = 1472;
  std::string hello;
  (void)encodeHello(hb, "svc", "fuzz", hello);
  PacketHeader h = makeHeader(PacketType::kHello, 0, 99, 0);
  h.total = static_cast<uint32_t>(hello.size());
  OutDatagram d{serverAddr, {{&h, sizeof h}, {hello.data(), hello.size()}}, 2};
  (void)client->send({&d, 1});
  (void)server.pollOnce(std::chrono::nanoseconds(0));
  Drain drain;
  (void)client->receive(drain, ReceiveMode::kBlocking, std::chrono::nanoseconds(0));
  if (drain.session == 0) __builtin_trap();  // the harness itself is broken

  std::vector<std::byte> dgram;
  size_t pos = 0;
  int records = 0;
  while (pos + 3 <= size && records++ < 64) {
    size_t len = data[pos] | (size_t{data[pos + 1]} << 8);
    uint8_t mode = data[pos + 2];
    pos += 3;
    len = std::min(len, size - pos);
    dgram.assign(reinterpret_cast<const std::byte*>(data + pos), reinterpret_cast<const std::byte*>(data + pos + len));
    pos += len;
    if ((mode & 1) != 0 && dgram.size() >= kHeaderBytes) {
      std::memcpy(dgram.data() + offsetof(PacketHeader, cookie), &drain.cookie, sizeof drain.cookie);
      std::memcpy(dgram.data() + offsetof(PacketHeader, session), &drain.session, sizeof drain.session);
    }
    decodeAll(dgram);
    auto& from = (mode & 2) != 0 ? other : client;
    OutDatagram out{serverAddr, {{dgram.data(), dgram.size()}}, 1};
    (void)from->send({&out, 1});
    (void)server.pollOnce(std::chrono::nanoseconds(0));
    (void)client->receive(drain, ReceiveMode::kBlocking, std::chrono::nanoseconds(0));
    (void)other->receive(drain, ReceiveMode::kBlocking, std::chrono::nanoseconds(0));
  }
  return 0;
}
