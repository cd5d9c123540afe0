// The datagram format of the UDP transport: one fixed 32-byte header, then the payload.
// transport/wire_format.md is the prose specification; this file pins it with
// static_asserts. Encoding is a memcpy of the header (little-endian hosts only, as the
// A-stack frame), decoding is a memcpy plus a validation that never trusts the peer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "runtime/base/status.h"
#include "runtime/contract.h"

namespace lrpc::net {

inline constexpr uint16_t kMagic = 0x524c;  // "LR" on the wire
// 2: acks carry a 2048-fragment bitmap; 3: kRunning, sequence numbers wrap modulo 2^32;
// 4: a reply may carry releases (kFlagReleases).

// One U-Net cell: header and payload of a single-cell message. 64 bytes is one cache line,
// so a single-cell message is read and written as one line, and it holds the paper's
// Null and Add frames (0 and 8 argument bytes, 4 result bytes) with room to spare.
inline constexpr size_t kCellBytes = 64;
inline constexpr size_t kHeaderBytes = 32;
inline constexpr size_t kCellPayload = kCellBytes - kHeaderBytes;
// 1500-byte Ethernet MTU minus IPv4 (20) and UDP (8) headers: never rely on IP fragments.
inline constexpr size_t kDefaultMaxDatagram = 1472;
// Largest datagram any endpoint accepts (loopback MTU is 64 KiB).
inline constexpr size_t kMaxDatagramLimit = 65507;

enum class PacketType : uint8_t {
  kHello = 1,    // client -> server: open a session (name, interface id, signature hash)
  kWelcome = 2,  // server -> client: session id and cookie, or why not
  kRequest = 3,  // client -> server: a call's argument frame (or one fragment of it)
  kReply = 4,    // server -> client: a call's result frame or error (or one fragment)
  kAck = 5,      // either way: which fragments of a message arrived (selective); with no flags
                 // and no payload, client -> server: a keepalive (the client is alive)
  kReset = 6,    // server -> client: no such session (server restarted, session evicted)
  kBye = 7,      // client -> server: session closed, free its state
  kRunning = 8,  // server -> client: the call `seq` arrived whole and its handler is running
  kCancel = 9,   // client -> server: the caller gave up on call `seq` (its handler may look)
};
inline constexpr uint8_t kLastPacketType = static_cast<uint8_t>(PacketType::kCancel);

// Flag bits in PacketHeader::flags.
inline constexpr uint8_t kFlagSingleCell = 0x01;  // whole message fits one cell
inline constexpr uint8_t kFlagFragment = 0x02;    // one fragment of a larger message
inline constexpr uint8_t kFlagAckOfReply = 0x04;  // kAck: acknowledges reply fragments
// kAck: the receiver timed out waiting; resend what the ack shows missing. A plain ack
// never causes a resend (fragments it misses may still be in flight), which is what keeps
// duplicate acks from multiplying into a storm.
inline constexpr uint8_t kFlagResend = 0x08;
// On a fragment: the sender's window is full (or the message ends here), so it can send
// nothing more until it hears an ack: ack now, whatever the receiver's own ack interval.
inline constexpr uint8_t kFlagAckNow = 0x10;
// On a single-datagram kReply: the payload ends with the ids of objects of the client's callback
// host that the handler dropped (ReplyTrailer), to release before the call returns.
inline constexpr uint8_t kFlagReleases = 0x20;
inline constexpr uint8_t kKnownFlags = 0x3f;

// The fixed header of every datagram. All fields little-endian.
struct PacketHeader {
  uint16_t magic;      // kMagic
  uint8_t version;     // kVersion
  uint8_t type;        // PacketType
  uint8_t flags;       // kFlag*
  uint8_t status;      // kReply/kWelcome: Errc of the outcome; else 0
  uint16_t procedure;  // kRequest/kReply: PDL index
  uint64_t cookie;     // session cookie (kHello/kWelcome: the client's nonce)
  uint32_t session;    // server-assigned session id (0 in kHello)
  uint32_t seq;        // call sequence number within the session
  uint32_t fragment;   // index of this fragment (0 when not fragmented)
  uint32_t total;      // bytes of the whole message payload
};
static_assert(sizeof(PacketHeader) == kHeaderBytes);
static_assert(std::is_trivially_copyable_v<PacketHeader>);
static_assert(offsetof(PacketHeader, procedure) == 6);
static_assert(offsetof(PacketHeader, cookie) == 8);
static_assert(offsetof(PacketHeader, session) == 16);
static_assert(offsetof(PacketHeader, seq) == 20);
static_assert(offsetof(PacketHeader, fragment) == 24);
static_assert(offsetof(PacketHeader, total) == 28);

// kHello payload (then the exported name, then the client's interface name).
struct HelloBody {
  uint64_t ifaceId;
  uint64_t signatureHash;
  uint16_t nameLength;
  uint16_t ifaceNameLength;
  uint32_t window;       // calls the client keeps outstanding at most
  uint32_t maxDatagram;  // largest datagram the client receives
  uint32_t reserved;
};
static_assert(sizeof(HelloBody) == 32);

// kWelcome payload when status is ok (otherwise the payload is the error text).
struct WelcomeBody {
  uint64_t cookie;       // the session's cookie, to be echoed in every later packet
  uint32_t window;       // granted call window
  uint32_t maxDatagram;  // largest datagram the server receives
  uint32_t procedureCount;
  // The server ends a session it has heard nothing from for this long (ms; 0: never). A client
  // that holds objects of the session keeps it alive with keepalives (wire_format.md).
  uint32_t idleTimeoutMs;
};
static_assert(sizeof(WelcomeBody) == 24);

// kAck payload: every fragment below `cumulative` arrived, and bit i of `bits` says
// fragment cumulative + 1 + i arrived (selective acknowledgement). The bitmap spans the
// largest fragment window (about 3 MiB of 1440-byte fragments), so that a bulk sender can
// keep several GSO batches in flight and still learn exactly which fragments are missing.
inline constexpr uint32_t kAckBits = 2048;
struct AckBody {
  uint32_t cumulative;
  uint32_t complete;  // 1: the whole message arrived
  uint64_t bits[kAckBits / 64];
};
static_assert(sizeof(AckBody) == 264);

// The end of a kReply payload with kFlagReleases: `count` ids (1..kMaxReplyReleases), each a
// uint32 of the client's callback table, then `count` as a uint32. The call's results are
// the bytes before them.
inline constexpr uint32_t kMaxReplyReleases = 16;
constexpr size_t releaseTrailerBytes(size_t count) noexcept { return 4 * (count + 1); }
// Splits `payload` into the results and the ids (copied to `ids`, which holds
// kMaxReplyReleases); kBadFrame for a trailer that does not fit or counts 0 or too many.
Result<std::span<const std::byte>> splitReleases(std::span<const std::byte> payload, uint32_t* ids,
                                                 uint32_t* count) noexcept;
// Writes the trailer of `ids` (1..kMaxReplyReleases) into `at`, releaseTrailerBytes(ids.size()) long.
void writeReleases(std::span<std::byte> at, std::span<const uint32_t> ids) noexcept;

// Payload bytes one datagram carries at most for a given datagram size.
constexpr size_t fragmentPayload(size_t maxDatagram) noexcept { return maxDatagram - kHeaderBytes; }

// A validated view of a received datagram: the header copied out, the payload in place.
struct Packet {
  PacketHeader header;
  std::span<const std::byte> payload;
  PacketType type() const noexcept { return static_cast<PacketType>(header.type); }
};

// Checks magic, version, type, flags and the internal consistency of the lengths
// (fragment index within the message, payload within total). Never reads outside `bytes`.
Result<Packet> decodePacket(std::span<const std::byte> bytes) noexcept;

// Writes a header for a packet carrying `payloadBytes` of a `total`-byte message.
PacketHeader makeHeader(PacketType type, uint32_t session, uint64_t cookie, uint32_t seq) noexcept;

// Hello/Welcome/Ack bodies: decode checks sizes and the lengths inside.
struct Hello {
  HelloBody body;
  std::string_view name;
  std::string_view ifaceName;
};
Result<Hello> decodeHello(std::span<const std::byte> payload) noexcept;
Result<WelcomeBody> decodeWelcome(std::span<const std::byte> payload) noexcept;
Result<AckBody> decodeAck(std::span<const std::byte> payload) noexcept;

// Encodes a hello into `out` (resized); the name lengths are limited to kMaxNameBytes.
inline constexpr size_t kMaxNameBytes = 256;
Status encodeHello(const HelloBody& body, std::string_view name, std::string_view ifaceName,
                   std::string& out);

// The number of fragments a message of `total` bytes needs (at least 1).
constexpr uint32_t fragmentCount(uint64_t total, size_t perFragment) noexcept {
  return total == 0 ? 1 : static_cast<uint32_t>((total + perFragment - 1) / perFragment);
}

}  // namespace lrpc::net
