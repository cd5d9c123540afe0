// The network namespace a channel or server made its socket in, so that the sockets made for
// it later (a callback host, a channel back to a client) go to the same one, whichever
// namespace the thread that makes them is in. A program may make a channel from a thread that
// entered another namespace (setns) and then go back, as the benchmarks do.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>

#include "runtime/base/fd.h"
#include "runtime/base/status.h"

namespace lrpc::net {

class SocketNamespace {
 public:
  SocketNamespace() = default;  // none: run() runs in place
  // The calling thread's namespace (none if /proc cannot say).
  static SocketNamespace current() noexcept;
  // Runs `fn` in this namespace: in place when the calling thread is in it already, else on a
  // short-lived thread that enters it first.
  Status run(const std::function<Status()>& fn) const;

 private:
  std::shared_ptr<const OwnedFd> fd_;  // shared: copies name the same namespace
  ino_t inode_ = 0;
  dev_t device_ = 0;
};

}  // namespace lrpc::net
