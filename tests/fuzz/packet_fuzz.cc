#include "tests/fuzz/packet_fuzz.h"

#include <algorithm>
#include <vector>

#include "tests/caps/caps_impl.h"
#include "tests/fuzz/packet_fuzz_parts.h"
#include "transport/loopback.h"
#include "transport/server.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lrpc;
  using namespace lrpc::net;
  using namespace lrpc::net::fuzzing;
  auto net = std::make_shared<LoopbackNetwork>();
  lrpc::net::testing::Svc::Impl impl;
  lrpc::testing::FactoryImpl factory;  // hands out capabilities, whose ids the inputs may name
  ServerOptions so;
  so.maxMessageBytes = 1 << 20;
  so.window = 4;
  so.maxCapabilities = 8;
  UdpServer server(so);
  if (!server.add("svc", kFuzzDescriptor, &impl).isOk()) __builtin_trap();
  if (!server.add<caps::Factory>("factory", factory).isOk()) __builtin_trap();
  auto serverEp = net->open(7000);
  NetAddress serverAddr = serverEp->localAddress();
  server.attach(std::move(serverEp));
  auto client = net->open(0);
  auto other = net->open(0);

  // Real handshakes first, so that inputs can reach the sessions' state machines.
  Drain drain;
  for (const std::vector<std::byte>& hello :
       {helloDatagram(), helloDatagram(caps::Factory::kDescriptor, "factory", kCapsNonce)}) {
    OutDatagram d{serverAddr, {{const_cast<std::byte*>(hello.data()), hello.size()}}, 1};
    (void)client->send({&d, 1});
    (void)server.pollOnce(std::chrono::nanoseconds(0));
    (void)client->receive(drain, ReceiveMode::kBlocking, std::chrono::nanoseconds(0));
  }
  if (drain.session == 0 || drain.capsSession == 0) __builtin_trap();  // the harness itself is broken

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
    if ((mode & 1) != 0) {
      if ((mode & 4) != 0) {
        nameSession(dgram, drain.capsSession, drain.capsCookie);
      } else {
        nameSession(dgram, drain);
      }
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
