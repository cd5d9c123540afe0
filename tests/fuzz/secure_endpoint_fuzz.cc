// The secure endpoint fuzz target: arbitrary datagrams into a live UdpServer behind its
// SecureServerEndpoint (over the in-memory loopback, driven on the calling thread), after a
// real Noise handshake and a real lrpc session inside it. secure_fuzz.cc mutates the secure
// module's messages one parser at a time; this target sends them to the endpoint as a peer on
// the network would, so the session tables, the cookie and rate-limit paths, the replay window
// and the clear lrpc server behind them all see the input.
//
// Input: a sequence of records [len: u16 LE][mode: u8][len bytes]. Mode bit 0: seal the bytes
// under the real session's keys (they reach the lrpc server, as a client's own datagram
// would), else send them as they are; bit 1: with bit 0, first overwrite the inner header's
// session and cookie with the real lrpc session's; bit 2: without bit 0, XOR the bytes onto a
// fresh hello of the real client's initiator (the responder's checks, past the magic; at most
// kMaxHellos per input); bit 3:
// send the previous sealed datagram again (a replay); bit 4: send from another address.
// Every datagram the server sends back must be a handshake message or open under the
// session's keys and decode (the harness traps otherwise).
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "tests/fuzz/fuzz_target.h"
#include "tests/fuzz/packet_fuzz_parts.h"
#include "transport/loopback.h"
#include "transport/secure/data_channel.h"
#include "transport/secure/handshake.h"
#include "transport/secure/keys.h"
#include "transport/secure/messages.h"
#include "transport/secure_server_endpoint.h"
#include "transport/security.h"
#include "transport/server.h"

namespace lrpc::net::fuzzing {
namespace {

namespace sec = lrpc::secure;

constexpr size_t kMaxPlain = 1472 - sec::DataChannel::kOverhead;
// Fresh hellos per input: each costs both sides Diffie-Hellman work, and a few already take
// the responder under load (cookie replies) within one input.
constexpr int kMaxHellos = 8;

// The client's side: keeps the last handshake message the server sent, and opens and checks
// every data datagram.
struct ClientSink final : DatagramSink {
  void onDatagram(const Datagram& d) noexcept override {
    auto b = std::span(reinterpret_cast<const uint8_t*>(d.bytes.data()), d.bytes.size());
    const uint8_t type = sec::peekType(b.data(), b.size());
    if (type == uint8_t(sec::MessageType::kData)) {
      if (channel == nullptr) __builtin_trap();  // data before the session's keys exist
      opened.resize(b.size());
      auto n = channel->open(b, opened);
      if (!n.isOk()) __builtin_trap();  // the server sealed under keys we do not hold
      drain.take(std::as_bytes(std::span(opened.data(), *n)));
      return;
    }
    if (type == 0) __builtin_trap();  // a secure-only server never sends clear text
    reply.assign(b.begin(), b.end());
    replyType = type;
  }
  sec::DataChannel* channel = nullptr;
  Drain drain;
  std::vector<uint8_t> opened;
  std::vector<uint8_t> reply;
  uint8_t replyType = 0;
};

// Drops whatever arrives (the other address's answers are not ours to check).
struct Discard final : DatagramSink {
  void onDatagram(const Datagram&) noexcept override {}
};

}  // namespace
}  // namespace lrpc::net::fuzzing

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lrpc;
  using namespace lrpc::net;
  using namespace lrpc::net::fuzzing;
  auto serverKeys = sec::KeyPair::generate();
  auto clientKeys = sec::KeyPair::generate();
  if (!serverKeys.isOk() || !clientKeys.isOk()) __builtin_trap();

  auto net = std::make_shared<LoopbackNetwork>();
  testing::Svc::Impl impl;
  ServerOptions so;
  so.maxMessageBytes = 1 << 20;
  so.window = 4;
  so.security.keyPair = *serverKeys;
  so.security.allowedClients = {clientKeys->publicKey()};
  so.security.maxPending = 4;
  so.security.maxSessions = 4;
  UdpServer server(so);
  if (!server.add("svc", kFuzzDescriptor, &impl).isOk()) __builtin_trap();
  auto keys = loadServerKeys(so.security);
  if (!keys.isOk()) __builtin_trap();
  auto serverEp = net->open(7000);
  const NetAddress serverAddr = serverEp->localAddress();
  auto secureEp = SecureServerEndpoint::create(std::move(serverEp), std::move(*keys), so.security);
  if (!secureEp.isOk()) __builtin_trap();
  server.attach(std::move(*secureEp));
  auto client = net->open(0);
  auto other = net->open(0);
  ClientSink sink;
  Discard discard;

  auto send = [&](std::unique_ptr<Endpoint>& from, std::span<const uint8_t> bytes) {
    // (iovec names its bytes without const; sending only reads them.)
    OutDatagram out{serverAddr, {{const_cast<uint8_t*>(bytes.data()), bytes.size()}}, 1};
    (void)from->send({&out, 1});
    (void)server.pollOnce(std::chrono::nanoseconds(0));
    (void)client->receive(sink, ReceiveMode::kBlocking, std::chrono::nanoseconds(0));
    (void)other->receive(discard, ReceiveMode::kBlocking, std::chrono::nanoseconds(0));
  };

  // A real handshake, then a real lrpc session inside it, so that inputs can reach both.
  auto initiator = sec::Initiator::create(*clientKeys, serverKeys->publicKey());
  if (!initiator.isOk()) __builtin_trap();
  auto hello = initiator->writeHello();
  if (!hello.isOk()) __builtin_trap();
  send(client, *hello);
  if (sink.replyType != uint8_t(sec::MessageType::kReply)) __builtin_trap();  // the harness is broken
  auto transportKeys = initiator->readReply(sink.reply);
  if (!transportKeys.isOk()) __builtin_trap();
  auto channel = sec::DataChannel::create(*transportKeys);
  if (!channel.isOk()) __builtin_trap();
  sink.channel = &*channel;
  std::vector<uint8_t> sealed(1472);
  auto seal = [&](std::span<const uint8_t> plain) -> std::span<const uint8_t> {
    auto n = channel->seal(plain, sealed);
    if (!n.isOk()) __builtin_trap();
    return {sealed.data(), *n};
  };
  const std::vector<std::byte> lrpcHello = helloDatagram();
  send(client, seal({reinterpret_cast<const uint8_t*>(lrpcHello.data()), lrpcHello.size()}));
  if (sink.drain.session == 0) __builtin_trap();  // the harness is broken

  std::vector<uint8_t> bytes;
  std::vector<uint8_t> lastSealed;
  size_t pos = 0;
  int records = 0;
  int hellos = 0;
  while (pos + 3 <= size && records++ < 64) {
    size_t len = data[pos] | (size_t{data[pos + 1]} << 8);
    const uint8_t mode = data[pos + 2];
    pos += 3;
    len = std::min(len, size - pos);
    bytes.assign(data + pos, data + pos + len);
    pos += len;
    auto& from = (mode & 16) != 0 ? other : client;
    if ((mode & 8) != 0 && !lastSealed.empty()) {
      send(from, lastSealed);
      continue;
    }
    if ((mode & 1) != 0) {
      std::vector<std::byte> inner(reinterpret_cast<const std::byte*>(bytes.data()),
                                   reinterpret_cast<const std::byte*>(bytes.data()) + std::min(bytes.size(), kMaxPlain));
      if ((mode & 2) != 0) nameSession(inner, sink.drain);
      decodeAll(inner);
      auto out = seal({reinterpret_cast<const uint8_t*>(inner.data()), inner.size()});
      lastSealed.assign(out.begin(), out.end());
      send(from, out);
      continue;
    }
    if ((mode & 4) != 0) {
      if (++hellos > kMaxHellos) continue;
      auto fresh = initiator->writeHello();
      if (!fresh.isOk()) __builtin_trap();
      for (size_t i = 0; i < bytes.size() && i < fresh->size(); ++i) (*fresh)[i] ^= bytes[i];
      send(from, *fresh);
      continue;
    }
    send(from, bytes);
  }
  return 0;
}
