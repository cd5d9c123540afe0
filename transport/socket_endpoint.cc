#include "transport/socket_endpoint.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "transport/raw_syscalls.h"

namespace lrpc::net {

using Clock = std::chrono::steady_clock;

Result<std::unique_ptr<Endpoint>> SocketEndpoint::open(const EndpointOptions& options) {
  auto fd = openUdpSocket(options);
  if (!fd) return fd.status();
  return std::unique_ptr<Endpoint>(new SocketEndpoint(std::move(*fd), options));
}

SocketEndpoint::SocketEndpoint(OwnedFd fd, const EndpointOptions& options)
    : fd_(std::move(fd)), options_(options), local_(boundAddress(fd_.get())), receiver_(options.maxDatagram), aside_(options.maxDatagram) {}

SocketReceiver::SocketReceiver(size_t maxDatagram)
    : maxDatagram_(maxDatagram),
      // One spare byte so that an oversized datagram shows up as truncated.
      slotBytes_((maxDatagram + 1 + 15) & ~size_t{15}),
      buffers_(slotBytes_ * kBatch) {}

Status SocketEndpoint::send(std::span<const OutDatagram> batch) noexcept {
  mmsghdr msgs[kBatch];
  sockaddr_in names[kBatch];
  while (!batch.empty()) {
    unsigned n = batch.size() < kBatch ? static_cast<unsigned>(batch.size()) : kBatch;
    for (unsigned i = 0; i < n; ++i) {
      std::memset(&msgs[i], 0, sizeof msgs[i]);
      msghdr& m = msgs[i].msg_hdr;
      if (!options_.connect) {
        names[i] = toSockaddr(batch[i].to);
        m.msg_name = &names[i];
        m.msg_namelen = sizeof names[i];
      }
      m.msg_iov = const_cast<iovec*>(batch[i].iov);
      m.msg_iovlen = batch[i].iovCount;
    }
    int sent = sys::sendmmsg(fd_.get(), msgs, n, 0);
    if (sent < 0) {
      int err = errno;
      if (err == EINTR) continue;
      if (err == ECONNREFUSED) return Status(Errc::kPeerDied, "peer port unreachable");
      // A full queue or a transient error drops the datagram, as a network would.
      if (err == EAGAIN || err == ENOBUFS || err == ENETUNREACH || err == EHOSTUNREACH) sent = 1;
      else return Status::fromErrno(err, "sendmmsg");
    }
    batch = batch.subspan(static_cast<size_t>(sent));
  }
  return {};
}

Result<size_t> SocketReceiver::drain(int fd, DatagramSink& sink) noexcept {
  mmsghdr msgs[kBatch];
  iovec iov[kBatch];
  sockaddr_in names[kBatch];
  std::memset(msgs, 0, sizeof msgs);
  for (unsigned i = 0; i < kBatch; ++i) {
    iov[i] = {buffers_.data() + i * slotBytes_, slotBytes_};
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
    msgs[i].msg_hdr.msg_name = &names[i];
    msgs[i].msg_hdr.msg_namelen = sizeof names[i];
  }
  int got = sys::recvmmsg(fd, msgs, kBatch, MSG_DONTWAIT);
  if (got < 0) {
    int err = errno;
    if (err == EAGAIN || err == EINTR) return size_t{0};
    if (err == ECONNREFUSED) return Status(Errc::kPeerDied, "peer port unreachable");
    return Status::fromErrno(err, "recvmmsg");
  }
  size_t delivered = 0;
  for (int i = 0; i < got; ++i) {
    size_t len = msgs[i].msg_len;
    if ((msgs[i].msg_hdr.msg_flags & MSG_TRUNC) != 0 || len > maxDatagram_) continue;
    if (msgs[i].msg_hdr.msg_namelen != sizeof(sockaddr_in)) continue;
    Datagram d{fromSockaddr(names[i]), {buffers_.data() + i * slotBytes_, len}};
    sink.onDatagram(d);
    ++delivered;
  }
  // Something arrived even if all of it was dropped: report at least "progress" as 0 is
  // fine, the caller loops on its own clock.
  return delivered;
}

Result<size_t> SocketReceiver::pollOne(int fd, DatagramSink& sink, int flags, size_t* bytes) noexcept {
  if (bytes != nullptr) *bytes = 0;
  sockaddr_in name{};
  socklen_t nameLen = sizeof name;
  // MSG_TRUNC: the datagram's real length, so an oversized one is seen and dropped.
  ssize_t len = sys::recvfrom(fd, buffers_.data(), slotBytes_, flags | MSG_TRUNC, reinterpret_cast<sockaddr*>(&name),
                           &nameLen);
  if (len < 0) {
    int err = errno;
    if (err == EAGAIN || err == EINTR) return size_t{0};
    if (err == ECONNREFUSED) return Status(Errc::kPeerDied, "peer port unreachable");
    return Status::fromErrno(err, "recvfrom");
  }
  if (bytes != nullptr) *bytes = static_cast<size_t>(len);
  if (static_cast<size_t>(len) > maxDatagram_ || nameLen != sizeof name) return size_t{0};
  sink.onDatagram(Datagram{fromSockaddr(name), {buffers_.data(), static_cast<size_t>(len)}});
  return size_t{1};
}

Result<size_t> SocketEndpoint::receive(DatagramSink& sink, ReceiveMode mode, std::chrono::nanoseconds timeout) noexcept {
  auto start = Clock::now();
  auto deadline = start + timeout;
  auto spinUntil = spinEnd(mode, start, timeout, options_.spinBeforeBlock);
  Backoff backoff;
  for (;;) {
    auto got = receiver_.drain(fd_.get(), sink);
    if (!got || *got > 0) return got;
    auto now = Clock::now();
    if (now >= deadline) return size_t{0};
    if (now < spinUntil) {
      backoff.pause(now);
      continue;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
    pollfd p{fd_.get(), POLLIN, 0};
    int rc = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (rc < 0 && errno != EINTR) return Status::fromErrno(errno, "poll");
    if (rc == 0 && Clock::now() >= deadline) return size_t{0};
  }
}

Result<size_t> SocketEndpoint::receiveAside(DatagramSink& sink) noexcept { return aside_.read(fd_.get(), sink); }

Result<size_t> AsideReader::read(int fd, DatagramSink& sink) noexcept {
  if (!mu_.tryLock()) return size_t{0};
  Result<size_t> got = size_t{0};
  if (!receiver_) {
    try {
      receiver_ = std::make_unique<SocketReceiver>(maxDatagram_);
    } catch (const std::bad_alloc&) {
      // No slots: the server's own thread reads what comes.
    }
  }
  // The kernel hands each datagram to one reader: this one, or the receive() that sleeps
  // in the socket meanwhile, which then sleeps on.
  if (receiver_) got = receiver_->pollOne(fd, sink, MSG_DONTWAIT);
  mu_.unlock();
  return got;
}

}  // namespace lrpc::net
