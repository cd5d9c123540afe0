// What the UDP server's fuzz targets share (packet_fuzz.cc, secure_endpoint_fuzz.cc): the test
// service minus its sleeping handlers, a sink that checks every datagram the server sends and
// learns a session from its Welcome, and every decoder run on raw bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "tests/transport/test_service.h"
#include "transport/endpoint.h"
#include "transport/fragment.h"
#include "transport/wire.h"

namespace lrpc::net::fuzzing {

// The test service minus the handlers that sleep (a fuzzer would find the long sleeps).
inline Status fuzzDispatch(void* self, uint32_t procedure, ServerCall& call) noexcept {
  if (procedure == testing::Svc::kSlow || procedure == testing::Svc::kSlowToken) {
    return Status(Errc::kInvalidArgument, "not in the fuzzer");
  }
  return testing::Svc::dispatch(self, procedure, call);
}

inline constexpr InterfaceDescriptor kFuzzDescriptor = {"fuzz:Svc", testing::Svc::kDescriptor.id,
                                                        testing::Svc::kDescriptor.signatureHash, testing::Svc::kProcedures,
                                                        testing::Svc::kCount, &fuzzDispatch};

// The nonces of the hellos the harnesses send: the fuzz service's session, and (packet_fuzz)
// a session with a service that hands out capabilities.
inline constexpr uint64_t kSvcNonce = 99;
inline constexpr uint64_t kCapsNonce = 98;

// Takes the server's clear lrpc datagrams: each must decode (the server never sends garbage),
// and an ok Welcome gives the session the inputs may then name.
struct Drain final : DatagramSink {
  void onDatagram(const Datagram& d) noexcept override { take(d.bytes); }
  void take(std::span<const std::byte> bytes) noexcept {
    auto p = decodePacket(bytes);
    if (!p.isOk()) __builtin_trap();
    if (p->type() == PacketType::kWelcome && p->header.status == 0) {
      auto w = decodeWelcome(p->payload);
      if (!w.isOk()) return;
      // A welcome echoes its hello's nonce in the cookie field.
      if (p->header.cookie == kCapsNonce) {
        capsSession = p->header.session;
        capsCookie = w->cookie;
      } else {
        session = p->header.session;
        cookie = w->cookie;
      }
    }
  }
  uint32_t session = 0;
  uint64_t cookie = 0;
  uint32_t capsSession = 0;
  uint64_t capsCookie = 0;
};

// The Hello of a real session with `iface` exported as `name`, as one datagram.
inline std::vector<std::byte> helloDatagram(const InterfaceDescriptor& iface = kFuzzDescriptor,
                                            const char* name = "svc", uint64_t nonce = kSvcNonce) {
  HelloBody hb{};
  hb.ifaceId = iface.id;
  hb.signatureHash = iface.signatureHash;
  hb.window = 4;
  hb.maxDatagram = 1400;
  std::string hello;
  (void)encodeHello(hb, name, "fuzz", hello);
  PacketHeader h = makeHeader(PacketType::kHello, 0, nonce, 0);
  h.total = static_cast<uint32_t>(hello.size());
  std::vector<std::byte> out(sizeof h + hello.size());
  std::memcpy(out.data(), &h, sizeof h);
  std::memcpy(out.data() + sizeof h, hello.data(), hello.size());
  return out;
}

// Overwrites a datagram's session and cookie with a real session's, so that it gets past the
// cookie check into the request, fragment and ack paths.
inline void nameSession(std::vector<std::byte>& dgram, uint32_t session, uint64_t cookie) {
  if (dgram.size() < kHeaderBytes) return;
  std::memcpy(dgram.data() + offsetof(PacketHeader, cookie), &cookie, sizeof cookie);
  std::memcpy(dgram.data() + offsetof(PacketHeader, session), &session, sizeof session);
}
inline void nameSession(std::vector<std::byte>& dgram, const Drain& drain) {
  nameSession(dgram, drain.session, drain.cookie);
}

// Every decoder on its own, on the raw bytes.
inline void decodeAll(std::span<const std::byte> bytes) {
  auto p = decodePacket(bytes);
  (void)decodeHello(bytes);
  (void)decodeAck(bytes);
  (void)decodeWelcome(bytes);
  if (!p.isOk()) return;
  (void)decodeHello(p->payload);
  (void)decodeAck(p->payload);
  // A reply's releases: only ever read from inside the payload.
  uint32_t ids[kMaxReplyReleases];
  uint32_t count = 0;
  (void)splitReleases(p->payload, ids, &count);
  (void)splitReleases(bytes, ids, &count);
  if ((p->header.flags & kFlagFragment) != 0 && p->header.total <= (1u << 20)) {
    MessageBuffer dest;
    Reassembly r;
    if (r.begin(p->header.total, 96 + p->header.procedure % 1400, dest).isOk()) {
      (void)r.accept(p->header, p->payload);
      (void)r.ack();
    }
  }
}

}  // namespace lrpc::net::fuzzing
