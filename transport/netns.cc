#include "transport/netns.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>

#include <cerrno>
#include <new>
#include <thread>

namespace lrpc::net {

namespace {
constexpr const char* kOwnNamespace = "/proc/thread-self/ns/net";
}

SocketNamespace SocketNamespace::current() noexcept {
  SocketNamespace ns;
  OwnedFd fd(::open(kOwnNamespace, O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0) return ns;
  try {
    ns.fd_ = std::make_shared<const OwnedFd>(std::move(fd));
  } catch (const std::bad_alloc&) {
    return ns;
  }
  ns.inode_ = st.st_ino;
  ns.device_ = st.st_dev;
  return ns;
}

Status SocketNamespace::run(const std::function<Status()>& fn) const {
  if (!fd_) return fn();
  struct stat st {};
  if (::stat(kOwnNamespace, &st) == 0 && st.st_ino == inode_ && st.st_dev == device_) return fn();
  Status result;
  try {
    std::thread t([&] {
      if (::setns(fd_->get(), CLONE_NEWNET) != 0) {
        result = Status::fromErrno(errno, "setns to the channel's network namespace");
        return;
      }
      result = fn();
    });
    t.join();
  } catch (const std::system_error& e) {
    return Status(Errc::kResourceExhausted, std::string("namespace thread: ") + e.what());
  }
  return result;
}

}  // namespace lrpc::net
