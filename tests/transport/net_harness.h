// The network tests' processes and relays, on top of the "two hosts" of tests/testing/netns.h:
// a server forked into a namespace, and a relay that reorders datagrams.
#pragma once

#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/testing/netns.h"
#include "tests/testing/socket_address.h"

namespace lrpc::net::testing {

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
      if (nsPath.empty() || lrpc::testing::enterNetns(nsPath)) port = serve(bindAddress);
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
  pid_t pid() const { return pid_; }
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
  sockaddr_in a = lrpc::testing::inetAddr(listenIp, 0);
  ::bind(*front, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(*front, reinterpret_cast<sockaddr*>(&a), &len);
  sockaddr_in s = lrpc::testing::inetAddr(serverIp, serverPort);
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
