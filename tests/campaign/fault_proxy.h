// A hostile network in the middle: a UDP relay between a client and a server that reorders,
// replays, spoofs, truncates and pads datagrams and floods the server with garbage, each at a
// seeded rate, so that the faults nftables cannot make (no netem here) are still reproducible.
// The client talks to the relay's front socket; the server sees the relay's back socket as the
// client's address, so what the relay injects from there comes "from the client".
//
// Create it on a thread inside the client's network namespace: its sockets (and threads)
// live there. Everything it sends goes to the one server address it was given.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace lrpc::campaign {

struct ProxyFaults {
  double reorder = 0;    // hold a datagram back until after the next one (or 3 ms)
  double replay = 0;     // also send an old datagram of the same direction again
  double spoof = 0;      // also send a copy with a corrupted cookie, and one from another port
  double truncate = 0;   // send a truncated copy instead of the datagram (a loss, as the peer sees it)
  double oversize = 0;   // also send a copy padded with garbage, up to 64 KiB
  int floodPerMs = 0;    // garbage datagrams per millisecond to the server while running
  uint64_t seed = 1;
};

class FaultProxy {
 public:
  FaultProxy(const std::string& serverIp, uint16_t serverPort, ProxyFaults faults)
      : faults_(faults), rng_(faults.seed) {
    server_.sin_family = AF_INET;
    server_.sin_port = htons(serverPort);
    ::inet_pton(AF_INET, serverIp.c_str(), &server_.sin_addr);
    front_ = udpSocket("127.0.0.1");
    back_ = udpSocket("0.0.0.0");
    other_ = udpSocket("0.0.0.0");
    sockaddr_in a{};
    socklen_t len = sizeof a;
    ::getsockname(front_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    relay_ = std::thread([this] { relay(); });
    if (faults_.floodPerMs > 0) flood_ = std::thread([this] { flood(); });
  }
  ~FaultProxy() {
    stop_.store(true);
    relay_.join();
    if (flood_.joinable()) flood_.join();
    ::close(front_);
    ::close(back_);
    ::close(other_);
  }
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  uint16_t port() const { return port_; }
  uint64_t injected() const { return injected_.load(); }
  uint64_t relayed() const { return relayed_.load(); }
  uint64_t reordered() const { return reordered_.load(); }

 private:
  static int udpSocket(const char* ip) {
    int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    ::inet_pton(AF_INET, ip, &a.sin_addr);
    ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
    return s;
  }
  bool chance(double p) { return p > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  struct Held {
    std::vector<char> bytes;
    bool toServer;
    std::chrono::steady_clock::time_point since;
  };

  void sendRaw(int sock, bool toServer, const char* p, size_t n) {
    const sockaddr_in& to = toServer ? server_ : client_;
    ::sendto(sock, p, n, MSG_DONTWAIT, reinterpret_cast<const sockaddr*>(&to), sizeof to);
  }

  // One datagram of one direction, through the fault model.
  void forward(std::vector<char> d, bool toServer) {
    int out = toServer ? back_ : front_;
    auto& history = toServer ? upHistory_ : downHistory_;
    if (chance(faults_.replay) && !history.empty()) {
      const auto& old = history[rng_() % history.size()];
      sendRaw(out, toServer, old.data(), old.size());
      injected_.fetch_add(1);
    }
    if (history.size() < 512) history.push_back(d);
    else history[rng_() % history.size()] = d;
    if (chance(faults_.spoof) && d.size() >= 16) {
      std::vector<char> bad = d;
      bad[8 + rng_() % 8] ^= static_cast<char>(1 + rng_() % 255);  // the cookie field
      sendRaw(out, toServer, bad.data(), bad.size());
      if (toServer) sendRaw(other_, true, d.data(), d.size());  // right cookie, wrong source
      injected_.fetch_add(2);
    }
    if (chance(faults_.oversize)) {
      std::vector<char> big = d;
      big.resize(d.size() + 1 + rng_() % (65000 - d.size()));
      for (size_t i = d.size(); i < big.size(); ++i) big[i] = static_cast<char>(rng_());
      sendRaw(out, toServer, big.data(), big.size());
      injected_.fetch_add(1);
    }
    if (chance(faults_.truncate) && d.size() > 1) {
      d.resize(rng_() % d.size());
      injected_.fetch_add(1);
    }
    if (chance(faults_.reorder)) {
      held_.push_back({std::move(d), toServer, std::chrono::steady_clock::now()});
      reordered_.fetch_add(1);
      return;
    }
    sendRaw(out, toServer, d.data(), d.size());
    relayed_.fetch_add(1);
    // What was held back goes after this one: the two arrive swapped.
    while (!held_.empty()) release();
  }

  void release() {
    Held h = std::move(held_.front());
    held_.pop_front();
    sendRaw(h.toServer ? back_ : front_, h.toServer, h.bytes.data(), h.bytes.size());
    relayed_.fetch_add(1);
  }

  void relay() {
    std::vector<char> buf(65536);
    while (!stop_.load()) {
      pollfd p[2] = {{front_, POLLIN, 0}, {back_, POLLIN, 0}};
      ::poll(p, 2, 1);
      auto now = std::chrono::steady_clock::now();
      while (!held_.empty() && now - held_.front().since > std::chrono::milliseconds(3)) release();
      if (p[0].revents & POLLIN) {
        sockaddr_in from{};
        socklen_t len = sizeof from;
        ssize_t n = ::recvfrom(front_, buf.data(), buf.size(), MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), &len);
        if (n >= 0) {
          client_ = from;
          forward(std::vector<char>(buf.begin(), buf.begin() + n), true);
        }
      }
      if (p[1].revents & POLLIN) {
        ssize_t n = ::recv(back_, buf.data(), buf.size(), MSG_DONTWAIT);
        if (n >= 0 && client_.sin_port != 0) forward(std::vector<char>(buf.begin(), buf.begin() + n), false);
      }
    }
  }

  // Garbage at the server, bounded in rate and count: random bytes, and headers that look
  // like lrpc (magic "LR", version 1) with random fields, from the client's address and another.
  void flood() {
    std::mt19937_64 rng(faults_.seed * 31 + 7);
    std::vector<char> d(2048);
    for (uint64_t sent = 0; !stop_.load() && sent < 2'000'000;) {
      for (int i = 0; i < faults_.floodPerMs; ++i, ++sent) {
        size_t n = rng() % d.size();
        for (auto& c : d) c = static_cast<char>(rng());
        if (n >= 4 && rng() % 2 == 0) {
          d[0] = 0x4c;
          d[1] = 0x52;
          d[2] = 1;
          d[3] = static_cast<char>(1 + rng() % 7);
        }
        sendRaw(rng() % 2 ? back_ : other_, true, d.data(), n);
      }
      injected_.fetch_add(static_cast<uint64_t>(faults_.floodPerMs));
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  ProxyFaults faults_;
  std::mt19937_64 rng_;  // relay thread only
  sockaddr_in server_{};
  sockaddr_in client_{};  // relay thread only
  int front_ = -1, back_ = -1, other_ = -1;
  uint16_t port_ = 0;
  std::deque<Held> held_;                                // relay thread only
  std::vector<std::vector<char>> upHistory_, downHistory_;  // relay thread only
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> injected_{0}, relayed_{0}, reordered_{0};
  std::thread relay_, flood_;
};

}  // namespace lrpc::campaign
