#include "tests/testing/netns.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace lrpc::testing {

namespace {

// Runs a command line (the ip and nft tools) quietly; true on exit status 0.
bool sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }

// Tells apart the pairs of one process.
int nextPairNumber() {
  static std::atomic<int> count{0};
  return count.fetch_add(1);
}

}  // namespace

NetnsPair::NetnsPair() {
  const int pid = static_cast<int>(::getpid());
  const int n = nextPairNumber();
  const std::string id = std::to_string(pid) + "_" + std::to_string(n);
  a_ = "lrpcA" + id;
  b_ = "lrpcB" + id;
  // Interface names hold 15 characters at most.
  const std::string shortId = std::to_string(pid % 100000) + "_" + std::to_string(n % 100);
  vethA_ = "la" + shortId;
  vethB_ = "lb" + shortId;
  const std::string net = "10.213." + std::to_string(1 + (pid * 7 + n) % 250) + ".";
  ipA_ = net + "1";
  ipB_ = net + "2";
}

NetnsPair::~NetnsPair() {
  // Deleting a namespace deletes the veth end inside it, and with it the pair.
  if (madeA_) sh("ip netns del " + a_);
  if (madeB_) sh("ip netns del " + b_);
}

Status NetnsPair::create() {
  if (!sh("ip netns add " + a_)) return Status(Errc::kPermissionDenied, "'ip netns add' refused (not root, or no CAP_SYS_ADMIN)");
  madeA_ = true;
  if (!sh("ip netns add " + b_)) return Status(Errc::kPermissionDenied, "'ip netns add' refused");
  madeB_ = true;
  const std::string steps[] = {
      "ip link add " + vethA_ + " netns " + a_ + " type veth peer name " + vethB_ + " netns " + b_,
      "ip -n " + a_ + " addr add " + ipA_ + "/24 dev " + vethA_,
      "ip -n " + b_ + " addr add " + ipB_ + "/24 dev " + vethB_,
      "ip -n " + a_ + " link set " + vethA_ + " up",
      "ip -n " + b_ + " link set " + vethB_ + " up",
      "ip -n " + a_ + " link set lo up",
      "ip -n " + b_ + " link set lo up"};
  for (const std::string& step : steps) {
    if (!sh(step)) return Status(Errc::kUnsupported, "failed: " + step);
  }
  return {};
}

std::string NetnsPair::nsPath(bool a) const { return "/var/run/netns/" + (a ? a_ : b_); }

bool NetnsPair::nftA(const std::string& args) const { return sh("ip netns exec " + a_ + " nft " + args); }
bool NetnsPair::nftB(const std::string& args) const { return sh("ip netns exec " + b_ + " nft " + args); }

bool NetnsPair::addLoss(int percent) const {
  const std::string p = std::to_string(percent);
  return nftA("add table inet lrpcloss") &&
         nftA("add chain inet lrpcloss in '{ type filter hook input priority 0; }'") &&
         nftA("add chain inet lrpcloss out '{ type filter hook output priority 0; }'") &&
         nftA("add rule inet lrpcloss in meta l4proto udp numgen random mod 100 '<' " + p + " drop") &&
         nftA("add rule inet lrpcloss out meta l4proto udp numgen random mod 100 '<' " + p + " drop");
}

bool NetnsPair::addDuplication(int percent) const {
  const std::string p = std::to_string(percent);
  return nftA("add table ip lrpcdup") &&
         nftA("add chain ip lrpcdup out '{ type filter hook output priority 0; }'") &&
         nftA("add rule ip lrpcdup out meta l4proto udp numgen random mod 100 '<' " + p + " dup to " + ipB_ +
              " device " + vethA_) &&
         nftB("add table ip lrpcdup") &&
         nftB("add chain ip lrpcdup out '{ type filter hook output priority 0; }'") &&
         nftB("add rule ip lrpcdup out meta l4proto udp numgen random mod 100 '<' " + p + " dup to " + ipA_ +
              " device " + vethB_);
}

Status enterNetns(const std::string& path) {
  OwnedFd ns(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!ns.valid()) return Status::fromErrno(errno, "open " + path);
  if (::setns(ns.get(), CLONE_NEWNET) != 0) return Status::fromErrno(errno, "setns " + path);
  return {};
}

Result<NetnsScope> NetnsScope::enter(const std::string& path) {
  OwnedFd original(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!original.valid()) return Status::fromErrno(errno, "open own netns");
  if (Status s = enterNetns(path); !s) return s;
  return NetnsScope(std::move(original));
}

NetnsScope::~NetnsScope() {
  // A thread left in the wrong namespace would make every later socket there: stop instead.
  if (original_.valid() && ::setns(original_.get(), CLONE_NEWNET) != 0) {
    std::fprintf(stderr, "cannot return to the original network namespace\n");
    std::abort();
  }
}

void runIn(const std::string& path, const std::function<void()>& fn) {
  std::thread t([&] {
    if (!path.empty()) {
      if (Status s = enterNetns(path); !s) {
        std::fprintf(stderr, "%s\n", s.toString().c_str());
        std::abort();
      }
    }
    fn();
  });
  t.join();
}

}  // namespace lrpc::testing
