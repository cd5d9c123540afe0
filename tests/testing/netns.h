// "Two hosts" on one machine, for the tests and the benchmark: two network namespaces joined by
// a veth pair, made and removed by the fixture itself, and the ways into a namespace (for a
// scope, for a fresh thread or child for good, for one function on a thread of its own).
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "runtime/base/fd.h"
#include "runtime/base/status.h"

namespace lrpc::testing {

// Namespaces A and B, joined by a veth pair whose addresses (ipA, ipB) live only inside them.
// By convention A holds the server and B the client. The names carry the pid and a count of
// the pairs this process made, so parallel tests, several pairs in one process and a benchmark
// beside the tests never collide; the veth ends are made inside their namespaces, so their
// names never meet the host's interfaces. The destructor deletes both namespaces, and with
// them the veth.
class NetnsPair {
 public:
  NetnsPair();
  ~NetnsPair();
  NetnsPair(const NetnsPair&) = delete;
  NetnsPair& operator=(const NetnsPair&) = delete;

  // Ok, or kPermissionDenied/kUnsupported with the reason when namespaces are refused.
  Status create();

  // The namespace's path under /var/run/netns (a: A, else B), for setns or a server's spec.
  std::string nsPath(bool a) const;
  const std::string& ipA() const noexcept { return ipA_; }
  const std::string& ipB() const noexcept { return ipB_; }

  // Runs `nft args` inside A or B.
  bool nftA(const std::string& args) const;
  bool nftB(const std::string& args) const;
  // Loss on every UDP datagram into and out of A, `percent` in 100.
  bool addLoss(int percent) const;
  // Duplicates `percent` of the UDP datagrams each side sends (requests and replies).
  bool addDuplication(int percent) const;

 private:
  std::string a_, b_, vethA_, vethB_, ipA_, ipB_;
  bool madeA_ = false, madeB_ = false;
};

// Moves the calling thread into the namespace at `path` for good (setns is per thread): for a
// thread or a child process made to work there.
Status enterNetns(const std::string& path);

// Moves the calling thread into the namespace at `path` for its lifetime, then back. Sockets
// made meanwhile stay in that namespace.
class NetnsScope {
 public:
  static Result<NetnsScope> enter(const std::string& path);
  NetnsScope(NetnsScope&&) noexcept = default;
  NetnsScope& operator=(NetnsScope&&) = delete;
  ~NetnsScope();

 private:
  explicit NetnsScope(OwnedFd original) noexcept : original_(std::move(original)) {}
  OwnedFd original_;  // the thread's namespace before; invalid once moved from
};

// Runs `fn` on a thread inside the namespace at `path` (empty: the current one), and waits.
void runIn(const std::string& path, const std::function<void()>& fn);

}  // namespace lrpc::testing
