// The socket calls of the hot paths, made straight through syscall(2) rather than through
// glibc's wrappers. In a process with more than one thread (every lrpc server) each wrapper is
// a thread-cancellation point and brackets the system call with two locked instructions, a
// fifth or so of an empty non-blocking recvfrom, and a busy-polling side makes one per turn.
// lrpc never cancels threads, so nothing is lost.
//
// Sanitizer builds keep the wrappers: the sanitizers see the calls through them (ASan checks
// the buffers, TSan orders the threads that talk over a socket).
#pragma once

#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace lrpc::net::sys {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LRPC_SOCKET_WRAPPERS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define LRPC_SOCKET_WRAPPERS 1
#endif
#endif

#ifdef LRPC_SOCKET_WRAPPERS
inline ssize_t recvfrom(int fd, void* buf, size_t len, int flags, sockaddr* from, socklen_t* fromLen) noexcept {
  return ::recvfrom(fd, buf, len, flags, from, fromLen);
}
inline ssize_t sendto(int fd, const void* buf, size_t len, int flags, const sockaddr* to, socklen_t toLen) noexcept {
  return ::sendto(fd, buf, len, flags, to, toLen);
}
inline ssize_t recvmsg(int fd, msghdr* msg, int flags) noexcept { return ::recvmsg(fd, msg, flags); }
inline ssize_t sendmsg(int fd, const msghdr* msg, int flags) noexcept { return ::sendmsg(fd, msg, flags); }
inline int recvmmsg(int fd, mmsghdr* msgs, unsigned n, int flags) noexcept {
  return ::recvmmsg(fd, msgs, n, flags, nullptr);
}
inline int sendmmsg(int fd, mmsghdr* msgs, unsigned n, int flags) noexcept { return ::sendmmsg(fd, msgs, n, flags); }
#else
inline ssize_t recvfrom(int fd, void* buf, size_t len, int flags, sockaddr* from, socklen_t* fromLen) noexcept {
  return ::syscall(SYS_recvfrom, fd, buf, len, flags, from, fromLen);
}
inline ssize_t sendto(int fd, const void* buf, size_t len, int flags, const sockaddr* to, socklen_t toLen) noexcept {
  return ::syscall(SYS_sendto, fd, buf, len, flags, to, toLen);
}
inline ssize_t recvmsg(int fd, msghdr* msg, int flags) noexcept { return ::syscall(SYS_recvmsg, fd, msg, flags); }
inline ssize_t sendmsg(int fd, const msghdr* msg, int flags) noexcept { return ::syscall(SYS_sendmsg, fd, msg, flags); }
inline int recvmmsg(int fd, mmsghdr* msgs, unsigned n, int flags) noexcept {
  return static_cast<int>(::syscall(SYS_recvmmsg, fd, msgs, n, flags, nullptr));
}
inline int sendmmsg(int fd, mmsghdr* msgs, unsigned n, int flags) noexcept {
  return static_cast<int>(::syscall(SYS_sendmmsg, fd, msgs, n, flags));
}
#endif

}  // namespace lrpc::net::sys
