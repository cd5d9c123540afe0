#include "runtime/protocol.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace lrpc::detail {

Status sendMessage(int sock, const void* data, size_t size, int fd) noexcept {
  iovec iov{const_cast<void*>(data), size};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  if (fd >= 0) {
    std::memset(control, 0, sizeof control);
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  for (;;) {
    ssize_t n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (n == static_cast<ssize_t>(size)) return {};
    if (n >= 0) return Status(Errc::kIoError, "short send on the binding socket");
    if (errno == EINTR) continue;
    if (errno == EPIPE || errno == ECONNRESET) return Status(Errc::kPeerDied, "binding socket closed");
    return Status::fromErrno(errno, "sendmsg");
  }
}

Status recvMessage(int sock, void* data, size_t size, OwnedFd* fd, int timeoutMs) noexcept {
  if (timeoutMs >= 0) {
    pollfd p{sock, POLLIN, 0};
    int r;
    do {
      r = ::poll(&p, 1, timeoutMs);
    } while (r < 0 && errno == EINTR);
    if (r == 0) return Status(Errc::kDeadlineExceeded, "no reply on the binding socket");
    if (r < 0) return Status::fromErrno(errno, "poll");
  }
  // SOCK_SEQPACKET keeps message boundaries: an over-long message sets MSG_TRUNC below.
  iovec iov{data, size};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n == 0) return Status(Errc::kPeerDied, "binding socket closed");
  if (n < 0) {
    if (errno == ECONNRESET) return Status(Errc::kPeerDied, "binding socket reset");
    return Status::fromErrno(errno, "recvmsg");
  }
  // Take ownership of every fd that came, whatever else is wrong, so none leaks.
  OwnedFd got;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int one;
      std::memcpy(&one, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (!got.valid()) {
        got.reset(one);
      } else {
        OwnedFd extra(one);  // closed here
      }
    }
  }
  if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0 || static_cast<size_t>(n) != size) {
    return Status(Errc::kBadFrame, "binding message of unexpected size");
  }
  if (fd != nullptr) *fd = std::move(got);
  return {};
}

}  // namespace lrpc::detail
