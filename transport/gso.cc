#include "transport/gso.h"

#include <netinet/udp.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>

#include "transport/raw_syscalls.h"
#include "transport/udp_socket.h"

// Older libc headers lack the offload constants; the values are the kernel's ABI.
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

namespace lrpc::net {

bool gsoSupported(int fd) noexcept {
  int size = 0;
  socklen_t len = sizeof size;
  return ::getsockopt(fd, SOL_UDP, UDP_SEGMENT, &size, &len) == 0;
}

bool enableGro(int fd, bool on) noexcept {
  int value = on ? 1 : 0;
  return ::setsockopt(fd, SOL_UDP, UDP_GRO, &value, sizeof value) == 0;
}

size_t groSegmentSize(const cmsghdr& cm) noexcept {
  if (cm.cmsg_level != SOL_UDP || cm.cmsg_type != UDP_GRO || cm.cmsg_len < CMSG_LEN(sizeof(int))) return 0;
  int size = 0;
  std::memcpy(&size, CMSG_DATA(&cm), sizeof size);
  return size > 0 ? static_cast<size_t>(size) : 0;
}

void setSegmentSize(msghdr& msg, char (&control)[kSegmentControlBytes], size_t segment) noexcept {
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* cm = CMSG_FIRSTHDR(&msg);
  cm->cmsg_level = SOL_UDP;
  cm->cmsg_type = UDP_SEGMENT;
  cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
  uint16_t size = static_cast<uint16_t>(segment);
  std::memcpy(CMSG_DATA(cm), &size, sizeof size);
}

Result<size_t> sendGso(int fd, std::span<const iovec> pieces, size_t segment) noexcept {
  size_t bytes = 0;
  for (const iovec& piece : pieces) bytes += piece.iov_len;
  if (segment == 0 || bytes > gsoMaxBytes(segment)) {
    return Status(Errc::kInvalidArgument, "GSO buffer larger than one send may carry");
  }
  alignas(cmsghdr) char control[kSegmentControlBytes] = {};
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(pieces.data());
  msg.msg_iovlen = pieces.size();
  // A single datagram needs no segmentation (and the kernel rejects a segment size that
  // covers the whole buffer on some versions): send it plain.
  if (bytes > segment) setSegmentSize(msg, control, segment);
  for (;;) {
    ssize_t n = sys::sendmsg(fd, &msg, 0);
    if (n >= 0) return static_cast<size_t>(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == ENOBUFS) return Status(Errc::kResourceExhausted, "send buffer full");
    return Status::fromErrno(errno, "sendmsg with UDP_SEGMENT");
  }
}

Result<size_t> sendGso(int fd, std::span<const std::byte> payload, size_t segment) noexcept {
  const iovec piece{const_cast<std::byte*>(payload.data()), payload.size()};
  return sendGso(fd, std::span<const iovec>(&piece, 1), segment);
}

Result<GroDatagram> receiveGro(int fd, std::span<std::byte> buffer, sockaddr_in* from, int flags) noexcept {
  iovec iov{buffer.data(), buffer.size()};
  alignas(cmsghdr) char control[kGroControlBytes] = {};
  msghdr msg{};
  msg.msg_name = from;
  msg.msg_namelen = from != nullptr ? sizeof *from : 0;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = sys::recvmsg(fd, &msg, flags);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == EAGAIN) return Status(Errc::kDeadlineExceeded, "nothing queued");
    if (errno == ECONNREFUSED) return Status(Errc::kPeerDied, "peer port unreachable");
    return Status::fromErrno(errno, "recvmsg");
  }
  GroDatagram d;
  d.bytes = static_cast<size_t>(n);
  d.segment = d.bytes;
  d.truncated = (msg.msg_flags & MSG_TRUNC) != 0;
  for (cmsghdr* cm = CMSG_FIRSTHDR(&msg); cm != nullptr; cm = CMSG_NXTHDR(&msg, cm)) {
    if (size_t size = groSegmentSize(*cm); size > 0) d.segment = size;
  }
  return d;
}

namespace {
size_t datagramBytes(const OutDatagram& d) noexcept {
  size_t n = 0;
  for (uint32_t i = 0; i < d.iovCount; ++i) n += d.iov[i].iov_len;
  return n;
}
}  // namespace

size_t gsoRun(std::span<const OutDatagram> batch) noexcept {
  if (batch.empty()) return 0;
  const size_t segment = datagramBytes(batch[0]);
  if (segment == 0) return 1;
  size_t total = segment;
  size_t n = 1;
  while (n < batch.size() && n < kGsoMaxSegments) {
    const OutDatagram& d = batch[n];
    size_t bytes = datagramBytes(d);
    if (!(d.to == batch[0].to) || bytes == 0 || bytes > segment || total + bytes > kGsoMaxPayload) break;
    total += bytes;
    ++n;
    if (bytes < segment) break;  // only the last segment may be shorter
  }
  return n;
}

void GsoMessage::build(std::span<const OutDatagram> run, bool connected) noexcept {
  msg_ = msghdr{};
  datagrams_ = run.size();
  size_t k = 0;
  for (const OutDatagram& d : run) {
    for (uint32_t i = 0; i < d.iovCount; ++i) iov_[k++] = d.iov[i];
  }
  msg_.msg_iov = iov_;
  msg_.msg_iovlen = k;
  if (!connected && !run.empty()) {
    name_ = toSockaddr(run[0].to);
    msg_.msg_name = &name_;
    msg_.msg_namelen = sizeof name_;
  }
  if (run.size() > 1) setSegmentSize(msg_, control_, datagramBytes(run[0]));
}

}  // namespace lrpc::net
