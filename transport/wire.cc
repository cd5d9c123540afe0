#include "transport/wire.h"

#include <cstring>

namespace lrpc::net {

Result<Packet> decodePacket(std::span<const std::byte> bytes) noexcept {
  if (bytes.size() < kHeaderBytes) return Status(Errc::kBadFrame, "datagram shorter than the header");
  if (bytes.size() > kMaxDatagramLimit) return Status(Errc::kBadFrame, "datagram too large");
  Packet p;
  std::memcpy(&p.header, bytes.data(), kHeaderBytes);
  const PacketHeader& h = p.header;
  if (h.magic != kMagic) return Status(Errc::kBadFrame, "bad magic");
  if (h.version != kVersion) return Status(Errc::kBadFrame, "unknown protocol version");
  if (h.type < static_cast<uint8_t>(PacketType::kHello) || h.type > kLastPacketType) {
    return Status(Errc::kBadFrame, "unknown packet type");
  }
  if ((h.flags & ~kKnownFlags) != 0) return Status(Errc::kBadFrame, "unknown flags");
  p.payload = bytes.subspan(kHeaderBytes);
  const bool fragment = (h.flags & kFlagFragment) != 0;
  if (fragment) {
    if (p.type() != PacketType::kRequest && p.type() != PacketType::kReply) {
      return Status(Errc::kBadFrame, "only requests and replies are fragmented");
    }
    if (p.payload.empty() || p.payload.size() > h.total) return Status(Errc::kBadFrame, "fragment length");
    if (h.fragment >= h.total) return Status(Errc::kBadFrame, "fragment index beyond the message");
  } else {
    if (h.fragment != 0 || h.total != p.payload.size()) return Status(Errc::kBadFrame, "length mismatch");
  }
  if ((h.flags & kFlagAckNow) != 0 && !fragment) return Status(Errc::kBadFrame, "ack-now flag on a whole message");
  if ((h.flags & kFlagSingleCell) != 0 && (fragment || bytes.size() > kCellBytes)) {
    return Status(Errc::kBadFrame, "single-cell flag on a multi-cell packet");
  }
  if (h.status > static_cast<uint8_t>(Errc::kLastErrc)) return Status(Errc::kBadFrame, "unknown status");
  if ((h.flags & kFlagReleases) != 0 && (p.type() != PacketType::kReply || fragment || h.status != 0)) {
    return Status(Errc::kBadFrame, "releases on a packet other than a whole, successful reply");
  }
  return p;
}

void writeReleases(std::span<std::byte> at, std::span<const uint32_t> ids) noexcept {
  const auto count = static_cast<uint32_t>(ids.size());
  std::memcpy(at.data(), ids.data(), ids.size_bytes());
  std::memcpy(at.data() + ids.size_bytes(), &count, sizeof count);
}

Result<std::span<const std::byte>> splitReleases(std::span<const std::byte> payload, uint32_t* ids,
                                                 uint32_t* count) noexcept {
  uint32_t n = 0;
  if (payload.size() < sizeof n) return Status(Errc::kBadFrame, "reply too short for its releases");
  std::memcpy(&n, payload.data() + payload.size() - sizeof n, sizeof n);
  if (n == 0 || n > kMaxReplyReleases || payload.size() < releaseTrailerBytes(n)) {
    return Status(Errc::kBadFrame, "malformed releases on a reply");
  }
  const size_t results = payload.size() - releaseTrailerBytes(n);
  std::memcpy(ids, payload.data() + results, 4 * size_t{n});
  *count = n;
  return payload.first(results);
}

PacketHeader makeHeader(PacketType type, uint32_t session, uint64_t cookie, uint32_t seq) noexcept {
  PacketHeader h{};
  h.magic = kMagic;
  h.version = kVersion;
  h.type = static_cast<uint8_t>(type);
  h.cookie = cookie;
  h.session = session;
  h.seq = seq;
  return h;
}

Result<Hello> decodeHello(std::span<const std::byte> payload) noexcept {
  if (payload.size() < sizeof(HelloBody)) return Status(Errc::kBadFrame, "hello too short");
  Hello h;
  std::memcpy(&h.body, payload.data(), sizeof(HelloBody));
  size_t need = sizeof(HelloBody) + size_t{h.body.nameLength} + h.body.ifaceNameLength;
  if (h.body.nameLength > kMaxNameBytes || h.body.ifaceNameLength > kMaxNameBytes || payload.size() != need) {
    return Status(Errc::kBadFrame, "hello name lengths");
  }
  const char* names = reinterpret_cast<const char*>(payload.data() + sizeof(HelloBody));
  h.name = std::string_view(names, h.body.nameLength);
  h.ifaceName = std::string_view(names + h.body.nameLength, h.body.ifaceNameLength);
  return h;
}

Result<WelcomeBody> decodeWelcome(std::span<const std::byte> payload) noexcept {
  if (payload.size() != sizeof(WelcomeBody)) return Status(Errc::kBadFrame, "welcome size");
  WelcomeBody w;
  std::memcpy(&w, payload.data(), sizeof w);
  return w;
}

Result<AckBody> decodeAck(std::span<const std::byte> payload) noexcept {
  if (payload.size() != sizeof(AckBody)) return Status(Errc::kBadFrame, "ack size");
  AckBody a;
  std::memcpy(&a, payload.data(), sizeof a);
  if (a.complete > 1) return Status(Errc::kBadFrame, "ack complete flag");
  return a;
}

Status encodeHello(const HelloBody& body, std::string_view name, std::string_view ifaceName, std::string& out) {
  if (name.size() > kMaxNameBytes || ifaceName.size() > kMaxNameBytes) {
    return Status(Errc::kInvalidArgument, "name longer than 256 bytes");
  }
  HelloBody b = body;
  b.nameLength = static_cast<uint16_t>(name.size());
  b.ifaceNameLength = static_cast<uint16_t>(ifaceName.size());
  out.resize(sizeof b);
  std::memcpy(out.data(), &b, sizeof b);
  out.append(name);
  out.append(ifaceName);
  return {};
}

}  // namespace lrpc::net
