// Byte layouts of the secure transport's datagrams (README.md here has the table). Every
// secure datagram starts with the same 4 bytes: magic "LS" (distinct from the clear-text
// "LR"), a type, and the protocol version (handshake) or key generation (data).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "runtime/contract.h"

namespace lrpc::secure {

inline constexpr uint16_t kSecureMagic = 0x534c;  // "LS" on the wire

enum class MessageType : uint8_t {
  kHello = 1,        // initiator -> responder: Noise IK message 1
  kReply = 2,        // responder -> initiator: Noise IK message 2
  kCookieReply = 3,  // responder -> initiator: under load, prove your address first
  kData = 4,         // either way: one sealed datagram
};

namespace hello {
inline constexpr size_t kSender = 4;
inline constexpr size_t kEphemeral = 8;
inline constexpr size_t kStatic = 40;     // 32 + tag
inline constexpr size_t kTimestamp = 88;  // 12 + tag
inline constexpr size_t kMac1 = 116;
inline constexpr size_t kMac2 = 132;
inline constexpr size_t kBytes = 148;
}  // namespace hello

namespace reply {
inline constexpr size_t kReceiver = 4;
inline constexpr size_t kEphemeral = 8;
inline constexpr size_t kPayload = 40;  // the responder's index, 4 + tag
inline constexpr size_t kMac1 = 60;
inline constexpr size_t kBytes = 76;
}  // namespace reply

namespace cookie_reply {
inline constexpr size_t kReceiver = 4;
inline constexpr size_t kNonce = 8;
inline constexpr size_t kCookie = 20;  // 16 + tag
inline constexpr size_t kBytes = 52;
}  // namespace cookie_reply

namespace data {
inline constexpr size_t kReceiver = 4;
inline constexpr size_t kCounter = 8;
inline constexpr size_t kHeaderBytes = 16;  // authenticated, not encrypted
inline constexpr size_t kOverhead = kHeaderBytes + 16;
}  // namespace data

inline constexpr size_t kMacBytes = 16;

inline void putU16(uint8_t* p, uint16_t v) noexcept { std::memcpy(p, &v, 2); }
inline void putU32(uint8_t* p, uint32_t v) noexcept { std::memcpy(p, &v, 4); }
inline void putU64(uint8_t* p, uint64_t v) noexcept { std::memcpy(p, &v, 8); }
inline uint16_t getU16(const uint8_t* p) noexcept {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline uint32_t getU32(const uint8_t* p) noexcept {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t getU64(const uint8_t* p) noexcept {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

inline void putPrefix(uint8_t* p, MessageType type, uint8_t versionOrGeneration) noexcept {
  putU16(p, kSecureMagic);
  p[2] = static_cast<uint8_t>(type);
  p[3] = versionOrGeneration;
}

// The type of a secure datagram, or 0 when it is not one (wrong magic, too short).
inline uint8_t peekType(const uint8_t* p, size_t n) noexcept {
  if (n < 4 || getU16(p) != kSecureMagic) return 0;
  return p[2];
}

}  // namespace lrpc::secure
