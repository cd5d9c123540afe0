#include "transport/loopback.h"

#include <arpa/inet.h>

#include <chrono>
#include <cstring>

namespace lrpc::net {

class LoopbackEndpoint final : public Endpoint {
 public:
  LoopbackEndpoint(std::shared_ptr<LoopbackNetwork> net, NetAddress self, std::shared_ptr<LoopbackNetwork::Inbox> inbox)
      : net_(std::move(net)), self_(self), inbox_(std::move(inbox)) {}
  ~LoopbackEndpoint() override { net_->close(self_); }

  const char* kind() const noexcept override { return "loopback"; }
  NetAddress localAddress() const noexcept override { return self_; }

  Status send(std::span<const OutDatagram> batch) noexcept override {
    std::vector<std::byte> bytes;
    for (const OutDatagram& d : batch) {
      bytes.clear();
      for (uint32_t i = 0; i < d.iovCount; ++i) {
        auto* p = static_cast<const std::byte*>(d.iov[i].iov_base);
        bytes.insert(bytes.end(), p, p + d.iov[i].iov_len);
      }
      net_->deliver(self_, d.to, bytes);
    }
    return {};
  }

  Result<size_t> receive(DatagramSink& sink, ReceiveMode, std::chrono::nanoseconds timeout) noexcept override {
    std::deque<std::pair<NetAddress, std::vector<std::byte>>> got;
    {
      MutexLock lock(inbox_->mu);
      const auto deadline = std::chrono::steady_clock::now() + timeout;
      while (inbox_->queue.empty()) {
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline) break;
        inbox_->cv.waitFor(inbox_->mu, deadline - now);
      }
      got.swap(inbox_->queue);
    }
    for (auto& [from, bytes] : got) sink.onDatagram(Datagram{from, bytes});
    return got.size();
  }

 private:
  std::shared_ptr<LoopbackNetwork> net_;
  NetAddress self_;
  std::shared_ptr<LoopbackNetwork::Inbox> inbox_;
};

std::unique_ptr<Endpoint> LoopbackNetwork::open(uint16_t port, size_t maxDatagram) {
  MutexLock lock(mu_);
  if (port == 0) {
    while (inboxes_.count(nextPort_) != 0) ++nextPort_;
    port = nextPort_++;
  }
  auto inbox = std::make_shared<Inbox>();
  inbox->maxDatagram = maxDatagram;
  inboxes_[port] = inbox;
  NetAddress self{htonl(INADDR_LOOPBACK), port};
  return std::make_unique<LoopbackEndpoint>(shared_from_this(), self, inbox);
}

void LoopbackNetwork::setFaults(const LoopbackFaults& f) {
  MutexLock lock(mu_);
  faults_ = f;
  rng_.seed(f.seed);
}

void LoopbackNetwork::setTap(std::function<void(NetAddress, NetAddress, std::span<const std::byte>)> tap) {
  MutexLock lock(mu_);
  tap_ = std::move(tap);
}

uint64_t LoopbackNetwork::sent() const {
  MutexLock lock(mu_);
  return sent_;
}

std::shared_ptr<LoopbackNetwork::Inbox> LoopbackNetwork::inbox(NetAddress a) {
  auto it = inboxes_.find(a.port);
  return it == inboxes_.end() ? nullptr : it->second;
}

void LoopbackNetwork::close(NetAddress a) {
  MutexLock lock(mu_);
  inboxes_.erase(a.port);
  held_.erase(a.port);
}

void LoopbackNetwork::inject(NetAddress from, NetAddress to, std::span<const std::byte> bytes) {
  MutexLock lock(mu_);
  enqueue(from, to, std::vector<std::byte>(bytes.begin(), bytes.end()));
}

void LoopbackNetwork::deliver(NetAddress from, NetAddress to, std::span<const std::byte> bytes) {
  MutexLock lock(mu_);
  ++sent_;
  if (tap_) tap_(from, to, bytes);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  if (coin(rng_) < faults_.drop) return;
  std::vector<std::byte> copy(bytes.begin(), bytes.end());
  if (coin(rng_) < faults_.reorder && held_.count(to.port) == 0) {
    held_[to.port] = {from, std::move(copy)};
    return;
  }
  if (coin(rng_) < faults_.duplicate) enqueue(from, to, copy);
  enqueue(from, to, std::move(copy));
  // The held datagram goes out after this one: the pair arrives swapped.
  auto held = held_.find(to.port);
  if (held != held_.end()) {
    auto [hFrom, hBytes] = std::move(held->second);
    held_.erase(held);
    enqueue(hFrom, to, std::move(hBytes));
  }
}

void LoopbackNetwork::enqueue(NetAddress from, NetAddress to, std::vector<std::byte> bytes) {
  auto box = inbox(to);
  if (!box) return;
  if (bytes.size() > box->maxDatagram) return;  // truncated on arrival: dropped
  {
    MutexLock lock(box->mu);
    box->queue.emplace_back(from, std::move(bytes));
  }
  box->cv.notifyOne();
}

}  // namespace lrpc::net
