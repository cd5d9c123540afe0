// UDP segmentation and receive offload (UDP_SEGMENT, UDP_GRO): many datagrams per system
// call. A sender hands the kernel one buffer and a segment size; the kernel cuts it into
// datagrams of that size (the last one shorter) as late as possible, so the per-datagram
// cost of the socket layer is paid once per buffer. A receiver with UDP_GRO gets runs of
// same-size datagrams from one peer coalesced into one buffer, with the segment size in a
// control message. On the wire nothing changes: the peer sees ordinary datagrams, so either
// side may use this without the other knowing.
//
// Free of the transport's state on purpose (plain fds and spans): the bulk floor in
// bench/bulk_bench.cc uses it as is, and the endpoints can adopt it one call at a time.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "runtime/base/status.h"
#include "transport/endpoint.h"

namespace lrpc::net {

// The payload of one segment: a 1500-byte Ethernet MTU minus the IPv4 and UDP headers.
inline constexpr size_t kGsoSegmentBytes = 1472;
// The kernel refuses more segments than this in one send (UDP_MAX_SEGMENTS), and the whole
// buffer must fit one IP packet's 16-bit length (65535 - 20 - 8 bytes of payload).
inline constexpr size_t kGsoMaxSegments = 64;
inline constexpr size_t kGsoMaxPayload = 65507;
// The largest buffer one sendGso may take for segments of `segment` bytes.
constexpr size_t gsoMaxBytes(size_t segment) noexcept {
  size_t bySegments = segment * kGsoMaxSegments;
  size_t byLength = kGsoMaxPayload / segment * segment;
  return bySegments < byLength ? bySegments : byLength;
}
// A receive buffer that holds any coalesced run (GRO never builds more than 64 KiB).
inline constexpr size_t kGroBufferBytes = 65536;

// Room for the UDP_GRO control message (the segment size, an int) in a receive.
inline constexpr size_t kGroControlBytes = CMSG_SPACE(sizeof(int));
// The segment size a UDP_GRO control message carries; 0 for any other control message.
size_t groSegmentSize(const cmsghdr& cm) noexcept;

// True when this kernel accepts UDP_SEGMENT on a UDP socket (probed once per call; cheap).
bool gsoSupported(int fd) noexcept;
// Turns UDP_GRO on (or off) on a UDP socket; false when the kernel lacks it (then every
// recvmsg returns one datagram, which receiveGro reports with segment == bytes).
bool enableGro(int fd, bool on = true) noexcept;

// Sends `payload` as datagrams of `segment` bytes (the last one shorter) with one sendmsg on
// a connected socket. payload.size() <= gsoMaxBytes(segment). Returns the bytes sent; a full
// send buffer is kResourceExhausted (nothing was sent), like a dropped datagram.
Result<size_t> sendGso(int fd, std::span<const std::byte> payload, size_t segment) noexcept;
// The same for a payload gathered from `pieces` back to back (at most UIO_MAXIOV of them).
Result<size_t> sendGso(int fd, std::span<const iovec> pieces, size_t segment) noexcept;

// Room for the UDP_SEGMENT control message in a send.
inline constexpr size_t kSegmentControlBytes = CMSG_SPACE(sizeof(uint16_t));
// Points `msg` at `control` holding a UDP_SEGMENT message: the kernel cuts the payload every
// `segment` bytes.
void setSegmentSize(msghdr& msg, char (&control)[kSegmentControlBytes], size_t segment) noexcept;

struct GroDatagram {
  size_t bytes = 0;        // received into the buffer
  size_t segment = 0;      // size of each datagram in the run (the last may be shorter)
  bool truncated = false;  // the run was longer than the buffer (MSG_TRUNC)
};
// Receives one (possibly coalesced) run into `buffer` (kGroBufferBytes is always enough);
// `from` gets the sender. Blocks unless the socket is non-blocking or `flags` has
// MSG_DONTWAIT (then kDeadlineExceeded when nothing is queued).
Result<GroDatagram> receiveGro(int fd, std::span<std::byte> buffer, sockaddr_in* from, int flags = 0) noexcept;

// ---- batches of OutDatagrams (the endpoints' send path) ----

// How many datagrams from the start of `batch` one GSO send can carry: consecutive datagrams
// to the same peer, each exactly as long as the first except the last, which may be shorter,
// at most kGsoMaxSegments and kGsoMaxPayload bytes together. A message's fragments are such
// a run (every fragment but the last has the same size), so a window of fragments leaves in
// a few system calls instead of one per datagram. Always >= 1 for a non-empty batch.
size_t gsoRun(std::span<const OutDatagram> batch) noexcept;

// One sendmsg for a run: the datagrams' pieces gathered back to back (the kernel cuts the
// concatenation every `segment` bytes, which are exactly the datagram boundaries) plus the
// UDP_SEGMENT control message. A run of one is a plain sendmsg. Lives while the send does
// (io_uring reads it at submission), and never moves (msg() points into it).
class GsoMessage {
 public:
  GsoMessage() = default;
  GsoMessage(const GsoMessage&) = delete;
  GsoMessage& operator=(const GsoMessage&) = delete;

  // `run` is batch.first(gsoRun(batch)); `connected`: the socket has a peer, no address.
  void build(std::span<const OutDatagram> run, bool connected) noexcept;
  msghdr* msg() noexcept { return &msg_; }
  size_t datagrams() const noexcept { return datagrams_; }

 private:
  msghdr msg_{};
  sockaddr_in name_{};
  size_t datagrams_ = 0;
  iovec iov_[kGsoMaxSegments * 3];  // an OutDatagram has up to three pieces
  alignas(cmsghdr) char control_[kSegmentControlBytes] = {};
};

}  // namespace lrpc::net
