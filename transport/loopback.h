// An in-memory network for tests: endpoints that exchange datagrams through queues, with
// seeded fault injection (drop, duplicate, reorder) per datagram. It implements the same
// Endpoint seam as the UDP endpoints, so the whole protocol runs without sockets.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "runtime/base/mutex.h"
#include "transport/endpoint.h"

namespace lrpc::net {

struct LoopbackFaults {
  double drop = 0;       // probability a datagram vanishes
  double duplicate = 0;  // probability it is delivered twice
  double reorder = 0;    // probability it is held back and delivered after the next one
  uint64_t seed = 1;
};

class LoopbackNetwork : public std::enable_shared_from_this<LoopbackNetwork> {
 public:
  explicit LoopbackNetwork(LoopbackFaults faults = {}) : faults_(faults), rng_(faults.seed) {}
  // An endpoint at 127.0.0.1:<port> (port 0: the next free one).
  std::unique_ptr<Endpoint> open(uint16_t port = 0, size_t maxDatagram = 1472);
  void setFaults(const LoopbackFaults& f);
  // Injects raw bytes as if `from` had sent them to `to` (fuzzing, replay).
  void inject(NetAddress from, NetAddress to, std::span<const std::byte> bytes);
  // Called for every datagram sent (before faults); tests count or record traffic.
  void setTap(std::function<void(NetAddress from, NetAddress to, std::span<const std::byte>)> tap);
  uint64_t sent() const;

 private:
  friend class LoopbackEndpoint;
  struct Inbox {
    Mutex mu;
    CondVar cv;
    std::deque<std::pair<NetAddress, std::vector<std::byte>>> queue LRPC_GUARDED_BY(mu);
    size_t maxDatagram = 1472;
  };
  void deliver(NetAddress from, NetAddress to, std::span<const std::byte> bytes);
  void enqueue(NetAddress from, NetAddress to, std::vector<std::byte> bytes) LRPC_REQUIRES(mu_);
  std::shared_ptr<Inbox> inbox(NetAddress a) LRPC_REQUIRES(mu_);
  void close(NetAddress a);

  mutable Mutex mu_;
  LoopbackFaults faults_ LRPC_GUARDED_BY(mu_);
  std::mt19937_64 rng_ LRPC_GUARDED_BY(mu_);
  std::map<uint16_t, std::shared_ptr<Inbox>> inboxes_ LRPC_GUARDED_BY(mu_);
  uint16_t nextPort_ LRPC_GUARDED_BY(mu_) = 40000;
  uint64_t sent_ LRPC_GUARDED_BY(mu_) = 0;
  std::function<void(NetAddress, NetAddress, std::span<const std::byte>)> tap_ LRPC_GUARDED_BY(mu_);
  // A datagram held back for reordering, per destination.
  std::map<uint16_t, std::pair<NetAddress, std::vector<std::byte>>> held_ LRPC_GUARDED_BY(mu_);
};

}  // namespace lrpc::net
