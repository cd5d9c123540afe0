// "Two hosts" for tests: two network namespaces joined by a veth pair, made and removed
// by the test itself (names carry the pid, so parallel runs never collide), a server
// forked into one namespace, and a helper that runs client code inside the other.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <random>
#include <vector>
#include <string>
#include <thread>

#include "runtime/base/status.h"

namespace lrpc::net::testing {

// Runs a shell command quietly; true on exit status 0.
inline bool sh(const std::string& cmd) {
  std::string quiet = cmd + " >/dev/null 2>&1";
  return std::system(quiet.c_str()) == 0;
}

class NetnsPair {
 public:
  NetnsPair() {
    static std::atomic<int> counter{0};  // several pairs in one test process
    int n = counter.fetch_add(1);
    std::string id = std::to_string(::getpid()) + "_" + std::to_string(n);
    a_ = "lrpcA" + id;
    b_ = "lrpcB" + id;
    vethA_ = "la" + std::to_string(::getpid() % 100000) + "_" + std::to_string(n % 100);
    vethB_ = "lb" + std::to_string(::getpid() % 100000) + "_" + std::to_string(n % 100);
    int net = 1 + (::getpid() * 7 + n) % 250;
    ipA_ = "10.213." + std::to_string(net) + ".1";
    ipB_ = "10.213." + std::to_string(net) + ".2";
  }
  NetnsPair(const NetnsPair&) = delete;
  NetnsPair& operator=(const NetnsPair&) = delete;
  ~NetnsPair() {
    // Deleting a namespace deletes the veth end inside it, and with it the pair.
    if (madeA_) sh("ip netns del " + a_);
    if (madeB_) sh("ip netns del " + b_);
  }

  // Ok, or kPermissionDenied/kUnsupported with the reason when namespaces are refused.
  Status create() {
    if (!sh("ip netns add " + a_)) return Status(Errc::kPermissionDenied, "'ip netns add' refused (not root, or no CAP_SYS_ADMIN)");
    madeA_ = true;
    if (!sh("ip netns add " + b_)) return Status(Errc::kPermissionDenied, "'ip netns add' refused");
    madeB_ = true;
    const char* steps[] = {"ip link add {va} type veth peer name {vb}",
                           "ip link set {va} netns {a}",
                           "ip link set {vb} netns {b}",
                           "ip -n {a} addr add {ipa}/24 dev {va}",
                           "ip -n {b} addr add {ipb}/24 dev {vb}",
                           "ip -n {a} link set {va} up",
                           "ip -n {b} link set {vb} up",
                           "ip -n {a} link set lo up",
                           "ip -n {b} link set lo up"};
    for (const char* step : steps) {
      std::string cmd = expand(step);
      if (!sh(cmd)) return Status(Errc::kUnsupported, "failed: " + cmd);
    }
    return {};
  }

  // Runs nft inside namespace A (the server's side).
  bool nftA(const std::string& args) { return sh("ip netns exec " + a_ + " nft " + args); }

  // Loss on every UDP datagram into and out of A, `percent` in 100.
  bool addLoss(int percent) {
    std::string p = std::to_string(percent);
    return nftA("add table inet lrpcloss") &&
           nftA("add chain inet lrpcloss in '{ type filter hook input priority 0; }'") &&
           nftA("add chain inet lrpcloss out '{ type filter hook output priority 0; }'") &&
           nftA("add rule inet lrpcloss in meta l4proto udp numgen random mod 100 '<' " + p + " drop") &&
           nftA("add rule inet lrpcloss out meta l4proto udp numgen random mod 100 '<' " + p + " drop");
  }
  bool nftB(const std::string& args) { return sh("ip netns exec " + b_ + " nft " + args); }
  // Duplicates `percent` of the UDP datagrams each side sends (requests and replies).
  bool addDuplication(int percent) {
    std::string p = std::to_string(percent);
    return nftA("add table ip lrpcdup") &&
           nftA("add chain ip lrpcdup out '{ type filter hook output priority 0; }'") &&
           nftA("add rule ip lrpcdup out meta l4proto udp numgen random mod 100 '<' " + p + " dup to " + ipB_ +
                " device " + vethA_) &&
           nftB("add table ip lrpcdup") &&
           nftB("add chain ip lrpcdup out '{ type filter hook output priority 0; }'") &&
           nftB("add rule ip lrpcdup out meta l4proto udp numgen random mod 100 '<' " + p + " dup to " + ipA_ +
                " device " + vethB_);
  }

  std::string nsPath(bool a) const { return "/var/run/netns/" + (a ? a_ : b_); }
  const std::string& ipA() const { return ipA_; }
  const std::string& ipB() const { return ipB_; }

 private:
  std::string expand(std::string s) const {
    auto rep = [&](const std::string& key, const std::string& v) {
      for (size_t pos; (pos = s.find(key)) != std::string::npos;) s.replace(pos, key.size(), v);
    };
    rep("{va}", vethA_);
    rep("{vb}", vethB_);
    rep("{ipa}", ipA_);
    rep("{ipb}", ipB_);
    rep("{a}", a_);
    rep("{b}", b_);
    return s;
  }

  std::string a_, b_, vethA_, vethB_, ipA_, ipB_;
  bool madeA_ = false, madeB_ = false;
};

// Enters the network namespace at `path` on the calling thread (setns is per thread).
inline bool enterNetns(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::setns(fd, CLONE_NEWNET) == 0;
  ::close(fd);
  return ok;
}

// Runs `fn` on a thread inside the namespace at `path` (empty: the current one).
inline void runIn(const std::string& path, const std::function<void()>& fn) {
  std::thread t([&] {
    if (!path.empty() && !enterNetns(path)) {
      std::fprintf(stderr, "setns %s failed\n", path.c_str());
      std::abort();
    }
    fn();
  });
  t.join();
}

// A child process serving until killed or until the parent goes away (its pipe closes),
// with a hard limit so that nothing outlives a crashed test by long.
class ForkedServer {
 public:
  // `serve(bindAddress)` runs in the child (after entering `nsPath`): it must start serving
  // and return the port (0 on failure); the child then waits for the parent.
  ForkedServer(const std::string& nsPath, const std::string& bindAddress, const std::function<uint16_t(const std::string&)>& serve) {
    int up[2], down[2];
    if (::pipe(up) != 0 || ::pipe(down) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(up[0]);
      ::close(down[1]);
      uint16_t port = 0;
      if (nsPath.empty() || enterNetns(nsPath)) port = serve(bindAddress);
      if (::write(up[1], &port, sizeof port) != sizeof port) ::_exit(1);
      // Wait for the parent to close its end (or die), at most two minutes.
      std::thread watchdog([] {
        std::this_thread::sleep_for(std::chrono::seconds(120));
        ::_exit(3);
      });
      watchdog.detach();
      char c;
      while (::read(down[0], &c, 1) < 0 && errno == EINTR) {
      }
      ::_exit(0);
    }
    ::close(up[1]);
    ::close(down[0]);
    down_ = down[1];
    if (pid_ > 0 && ::read(up[0], &port_, sizeof port_) != sizeof port_) port_ = 0;
    ::close(up[0]);
  }
  ~ForkedServer() {
    if (down_ >= 0) ::close(down_);
    if (pid_ > 0) {
      int status = 0;
      for (int i = 0; i < 50 && ::waitpid(pid_, &status, WNOHANG) == 0; ++i) ::usleep(20000);
      if (::waitpid(pid_, &status, WNOHANG) == 0) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
      }
    }
  }
  uint16_t port() const { return port_; }
  void kill() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
    }
  }

 private:
  pid_t pid_ = -1;
  int down_ = -1;
  uint16_t port_ = 0;
};

// A test relay's two sockets: `front` bound to listenIp:0 (the address clients are given, whose
// port is returned) and `back` connected to the server. The relay closes them.
inline uint16_t openRelaySockets(const std::string& listenIp, const std::string& serverIp, uint16_t serverPort,
                                 int* front, int* back) {
  *front = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  *back = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  ::inet_pton(AF_INET, listenIp.c_str(), &a.sin_addr);
  ::bind(*front, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(*front, reinterpret_cast<sockaddr*>(&a), &len);
  sockaddr_in s{};
  s.sin_family = AF_INET;
  s.sin_port = htons(serverPort);
  ::inet_pton(AF_INET, serverIp.c_str(), &s.sin_addr);
  ::connect(*back, reinterpret_cast<sockaddr*>(&s), sizeof s);
  return ntohs(a.sin_port);
}

// nftables cannot reorder, so this user-level relay does: the client talks to the relay,
// the relay to the server, and in each direction it holds back a datagram now and then and
// lets it go after the next one (or after 2 ms). Create it on a thread inside the namespace
// whose addresses it should use.
class ReorderRelay {
 public:
  // Listens on `listenIp`:0 and forwards to `server`. `percent` of datagrams are held back.
  ReorderRelay(const std::string& listenIp, const std::string& serverIp, uint16_t serverPort, int percent)
      : percent_(percent) {
    port_ = openRelaySockets(listenIp, serverIp, serverPort, &front_, &back_);
    thread_ = std::thread([this] { run(); });
  }
  ~ReorderRelay() {
    stop_.store(true);
    thread_.join();
    ::close(front_);
    ::close(back_);
  }
  uint16_t port() const { return port_; }
  uint64_t reordered() const { return reordered_.load(); }

 private:
  struct Held {
    std::vector<char> bytes;
    std::chrono::steady_clock::time_point since;
    bool valid = false;
  };
  void run() {
    std::mt19937 rng(42);
    std::vector<char> buf(70000);
    Held held[2];  // 0: toward the server, 1: toward the client
    while (!stop_.load()) {
      pollfd p[2] = {{front_, POLLIN, 0}, {back_, POLLIN, 0}};
      ::poll(p, 2, 1);
      for (int dir = 0; dir < 2; ++dir) {
        int fd = dir == 0 ? front_ : back_;
        for (;;) {
          sockaddr_in from{};
          socklen_t fl = sizeof from;
          ssize_t n = ::recvfrom(fd, buf.data(), buf.size(), MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), &fl);
          if (n < 0) break;
          if (dir == 0) client_ = from, haveClient_ = true;
          if (!held[dir].valid && static_cast<int>(rng() % 100) < percent_) {
            held[dir] = {std::vector<char>(buf.begin(), buf.begin() + n), std::chrono::steady_clock::now(), true};
            continue;
          }
          forward(dir, buf.data(), static_cast<size_t>(n));
          if (held[dir].valid) {  // now the held one, after the datagram that overtook it
            forward(dir, held[dir].bytes.data(), held[dir].bytes.size());
            held[dir].valid = false;
            reordered_.fetch_add(1);
          }
        }
        if (held[dir].valid && std::chrono::steady_clock::now() - held[dir].since > std::chrono::milliseconds(2)) {
          forward(dir, held[dir].bytes.data(), held[dir].bytes.size());
          held[dir].valid = false;
        }
      }
    }
  }
  void forward(int dir, const char* p, size_t n) {
    if (dir == 0) {
      (void)::send(back_, p, n, 0);
    } else if (haveClient_) {
      (void)::sendto(front_, p, n, 0, reinterpret_cast<sockaddr*>(&client_), sizeof client_);
    }
  }

  int percent_;
  int front_ = -1, back_ = -1;
  uint16_t port_ = 0;
  sockaddr_in client_{};
  bool haveClient_ = false;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> reordered_{0};
  std::thread thread_;
};

}  // namespace lrpc::net::testing
