// The transport's narrow seam: a U-Net endpoint that sends batches of datagrams and hands
// received ones to a sink. Three implementations: UringEndpoint (io_uring: registered
// communication segment, send queue = SQ, receive queue = CQ, free queue = provided-buffer
// ring), SocketEndpoint (U-Net's kernel-emulated endpoint: recvmmsg/sendmmsg on a plain
// socket) and LoopbackEndpoint (in memory, with fault injection, for tests).
#pragma once

#include <sys/uio.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "runtime/base/status.h"

namespace lrpc::net {

// An IPv4 address and port. `ip` in network byte order, `port` in host order.
struct NetAddress {
  uint32_t ip = 0;
  uint16_t port = 0;
  friend bool operator==(const NetAddress&, const NetAddress&) = default;
  std::string toString() const;
  // "1.2.3.4:80" made without allocating, for a Status's pieces in a noexcept function.
  class Text {
   public:
    operator std::string_view() const noexcept { return {buf_, len_}; }  // NOLINT: implicit

   private:
    friend struct NetAddress;
    char buf_[24];  // "255.255.255.255:65535" and its terminator
    size_t len_ = 0;
  };
  Text text() const noexcept;
};
// "1.2.3.4:80" or "host:80" (resolved with getaddrinfo, IPv4 only).
Result<NetAddress> parseAddress(std::string_view hostPort);

// How a receiver waits: spin on the receive queue (lowest latency, burns a core), sleep in
// the kernel until a datagram arrives, or spin briefly and then sleep (the default).
enum class ReceiveMode : uint8_t { kBusyPoll, kBlocking, kAdaptive };
// Parses "poll", "block", "adaptive"; anything else is kInvalidArgument.
Result<ReceiveMode> parseReceiveMode(std::string_view s);

struct Datagram {
  NetAddress from;
  std::span<const std::byte> bytes;  // valid only during the sink call
};

// One datagram to send, gathered from up to three pieces (header, fixed part, tail).
struct OutDatagram {
  NetAddress to;
  iovec iov[3];
  uint32_t iovCount = 0;
};

class DatagramSink {
 public:
  virtual void onDatagram(const Datagram& d) noexcept = 0;

 protected:
  ~DatagramSink() = default;
};

// Smallest datagram size an endpoint may be configured with (a hello must fit).
inline constexpr size_t kMinDatagram = 128;

// Receive buffers an endpoint with UDP_GRO keeps at most (64 KiB each). Datagrams beyond
// them wait in the socket's queue until buffers come back, so this bounds memory, not
// what can be received.
inline constexpr uint32_t kGroBuffers = 64;

struct EndpointOptions {
  // Bind here ("0.0.0.0:0" = any port). A client endpoint is connected to `peer` when set.
  std::string bindAddress = "0.0.0.0:0";
  NetAddress peer{};
  bool connect = false;
  size_t maxDatagram = 1472;
  uint32_t receiveBuffers = 256;   // free-queue size (power of two)
  std::chrono::nanoseconds spinBeforeBlock = std::chrono::microseconds(50);  // adaptive mode
  int socketBufferBytes = 4 << 20;  // SO_RCVBUF/SO_SNDBUF asked for
  // Receive offload (UDP_GRO, io_uring endpoint only): the kernel hands over a run of
  // same-size datagrams from one peer (a window of fragments) in one completion, up to
  // 64 KiB, which the endpoint cuts back into datagrams. Every receive buffer then holds
  // 64 KiB, so the free queue is capped at kGroBuffers of them. The socket option is on only
  // while large datagrams arrive: it makes each small one a little dearer.
  bool gro = true;
  bool emulated = false;            // skip io_uring (as LRPC_NO_IO_URING=1 does)
  // io_uring endpoint: receive through a multishot recvmsg into the registered segment
  // (U-Net's receive queue as a completion queue) whenever a receive would sleep, instead of
  // reading the socket. Off by default: waking a sleeper through the ring costs more than a
  // blocking read (uring_endpoint.h).
  bool ringReceive = false;
};

class Endpoint {
 public:
  virtual ~Endpoint() = default;
  // "io_uring", "emulated" or "loopback".
  virtual const char* kind() const noexcept = 0;
  virtual NetAddress localAddress() const noexcept = 0;
  // Sends every datagram of the batch (thread-safe). A full socket buffer drops the
  // datagram as the network would; the protocol above retransmits.
  virtual Status send(std::span<const OutDatagram> batch) noexcept = 0;
  // One thread at a time. Waits, per `mode`, up to `timeout` for datagrams and hands each
  // to `sink`; returns how many were delivered (0 on timeout). kPeerDied when the kernel
  // reports the connected peer unreachable (ICMP port unreachable).
  virtual Result<size_t> receive(DatagramSink& sink, ReceiveMode mode, std::chrono::nanoseconds timeout) noexcept = 0;
  // Whether receiveAside() can read: a socket read whole datagrams at a time (no receive
  // ring, no receive offload) and no sealing, so that a second reader needs only a buffer of
  // its own.
  virtual bool receivesAside() const noexcept { return false; }
  // A look at the socket, without waiting, by a thread other than the one in receive() and
  // while it may be there: what has arrived goes to `sink`, which must therefore take
  // datagrams from both threads. For a waiting caller that serves the callbacks its own call
  // causes (transport/callback_host.h). One aside reader at a time; another gets 0, as do
  // endpoints that cannot (receivesAside()).
  virtual Result<size_t> receiveAside(DatagramSink& sink) noexcept {
    (void)sink;
    return size_t{0};
  }
};

// Opens a UDP endpoint: io_uring when the kernel has every feature it needs and
// LRPC_NO_IO_URING is not set, else the emulated endpoint (logged once under LRPC_LOG=1).
Result<std::unique_ptr<Endpoint>> openUdpEndpoint(const EndpointOptions& options);

// Until when a wait in `mode` that starts at `start` and may last `timeout` spins before it
// sleeps: to the end when busy-polling, spinBeforeBlock at most when adaptive, not at all
// when blocking.
inline std::chrono::steady_clock::time_point spinEnd(ReceiveMode mode, std::chrono::steady_clock::time_point start,
                                                     std::chrono::nanoseconds timeout,
                                                     std::chrono::nanoseconds spinBeforeBlock) noexcept {
  if (mode == ReceiveMode::kBusyPoll) return start + timeout;
  if (mode == ReceiveMode::kAdaptive) return start + std::min(timeout, spinBeforeBlock);
  return start;
}

// Spin-wait helper shared by the endpoints: pause, and after a while yield the CPU on every
// turn, so that a busy-polling thread does not starve a thread it waits for on its own core
// (the server's callback into this process, or the peer on an oversubscribed machine).
// Counted in time, not turns: a turn that reads the socket is a system call, so a count of
// turns meant milliseconds, during which a callback host woken on this core waited.
class Backoff {
 public:
  // Past the waiting a reply usually takes (a veth round trip is microseconds), not much more: a
  // yield with nothing else runnable costs well under a microsecond.
  static constexpr std::chrono::microseconds kYieldAfter{10};
  // `now`: the caller's latest clock reading (it keeps one for its deadline anyway).
  void pause(std::chrono::steady_clock::time_point now) noexcept;

 private:
  std::chrono::steady_clock::time_point since_{};
};

}  // namespace lrpc::net
