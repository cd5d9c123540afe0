// The io_uring endpoint, U-Net's structure on today's kernel:
//  * communication segment: one mapping holding every receive buffer. Not pinned as U-Net's
//    are (io_uring_register_buffers): no operation here reads fixed buffers, and pinning the
//    4 MiB of a channel's segment faults every page in when the channel opens, most of a
//    new client's time to its first call;
//  * free queue: a provided-buffer ring (io_uring_register_buf_ring) listing the segment's
//    free buffers; the kernel takes one per datagram, we give it back after processing;
//  * receive queue: the completion queue of a multishot recvmsg, one CQE per datagram
//    naming the buffer it landed in (processed in place, never copied to a second buffer),
//    when EndpointOptions::ringReceive asks for it. By default the receiver reads the socket
//    itself (see receiveDirect): a thread asleep in a blocking read is woken by the kernel
//    directly, while a datagram for the multishot receive is first task work on the arming
//    thread and then a completion that wakes it, microseconds more per datagram in a
//    blocking round trip;
//  * send queue: the submission queue of a second ring, SENDMSG straight from the caller's
//    frame bytes (sends may come from many threads, so they have their own ring and lock,
//    while the receive ring belongs to whichever thread polls), for batches: a window of
//    fragments leaves as a few GSO sendmsgs in one submission. A lone datagram (a small
//    call, a reply, an ack) is one direct system call instead, which is cheaper than an
//    enter plus the ring's submission and completion for a single operation.
#pragma once

#include <liburing.h>

#include <memory>
#include <vector>

#include "runtime/base/mapping.h"
#include "runtime/base/mutex.h"
#include "transport/endpoint.h"
#include "transport/gso.h"
#include "transport/socket_endpoint.h"
#include "transport/udp_socket.h"

namespace lrpc::net {

// RAII io_uring instance: io_uring_queue_exit in the destructor.
class Ring {
 public:
  Ring() noexcept = default;
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;
  ~Ring();
  // -errno on failure (kept inside; the endpoint maps it to a Status).
  // `cqEntries` 0: the default (twice the submission queue).
  int init(unsigned entries, unsigned cqEntries = 0, unsigned flags = 0) noexcept;
  io_uring* get() noexcept { return &ring_; }

 private:
  io_uring ring_{};
  bool live_ = false;
};

class UringEndpoint final : public Endpoint {
 public:
  // kUnsupported (with the reason) when the kernel lacks a needed feature.
  static Result<std::unique_ptr<Endpoint>> open(const EndpointOptions& options);
  ~UringEndpoint() override;

  const char* kind() const noexcept override { return "io_uring"; }
  // Whether UDP_GRO is switched on now (for tests: it follows the traffic, see gro_).
  bool groActive() const noexcept { return groOn_; }
  NetAddress localAddress() const noexcept override { return local_; }
  Status send(std::span<const OutDatagram> batch) noexcept override;
  Result<size_t> receive(DatagramSink& sink, ReceiveMode mode, std::chrono::nanoseconds timeout) noexcept override;
  bool receivesAside() const noexcept override { return !gro_ && !options_.ringReceive; }
  Result<size_t> receiveAside(DatagramSink& sink) noexcept override;

 private:
  static constexpr unsigned kSendBatch = 32;
  explicit UringEndpoint(const EndpointOptions& options) : options_(options), pollReceiver_(options.maxDatagram), aside_(options.maxDatagram) {}
  Status setUp();
  // Arms the multishot recvmsg (again after it ended).
  Status arm() noexcept;
  // Handles every ready CQE; returns datagrams delivered, or kPeerDied.
  Result<size_t> reap(DatagramSink& sink) noexcept;
  // Hands one completion's payload to the sink: one datagram, or a coalesced run cut back
  // into datagrams of `segment` bytes (the last may be shorter). Returns datagrams delivered.
  size_t deliver(DatagramSink& sink, NetAddress from, std::span<const std::byte> payload, size_t segment) noexcept;
  // Sends a lone datagram with one system call of its own, no ring and no lock.
  Status sendOne(const OutDatagram& d) noexcept;

  EndpointOptions options_;
  OwnedFd fd_;
  NetAddress local_;
  // Destruction order: rings first (they reference the mappings), then the mappings.
  Mapping segment_;   // receive buffers (the communication segment)
  Mapping bufRingMem_;
  Ring recvRing_;
  Mutex sendMu_;
  Ring sendRing_ LRPC_GUARDED_BY(sendMu_);
  // One sendmsg per run of equal-size datagrams (UDP_SEGMENT, transport/gso.h); off for good
  // once the kernel refuses it.
  std::unique_ptr<GsoMessage[]> sendMsgs_ LRPC_GUARDED_BY(sendMu_) = std::make_unique<GsoMessage[]>(kSendBatch);
  bool gso_ LRPC_GUARDED_BY(sendMu_) = true;
  io_uring_buf_ring* bufRing_ = nullptr;
  unsigned buffers_ = 0;
  size_t bufferBytes_ = 0;
  msghdr recvMsg_{};  // template for the multishot recvmsg
  // UDP_GRO works on this socket: receives take room and a control message for a run of
  // datagrams. The option itself is on only while large datagrams arrive (groOn_): with it on,
  // every small datagram costs the kernel a little more, about 2% of a blocking Null round
  // trip over the veth pair here (1.12x against 1.10x the raw UDP floor, paired).
  bool gro_ = false;
  void adaptGro(size_t bytes) noexcept;  // per datagram or run read (deliver, readSocket)
  static constexpr size_t kBulkDatagram = 1024;  // fragments are about 1.4 KiB
  static constexpr uint32_t kGroOnAfter = 4;     // large datagrams in a row to turn it on
  static constexpr uint32_t kGroOffAfter = 256;  // small ones in a row to turn it off
  bool groOn_ = false;
  bool groDraining_ = false;  // off, but a coalesced run may still be queued
  uint32_t bulkRun_ = 0;
  uint32_t smallRun_ = 0;
  // Busy-poll reads the socket itself while no multishot receive is armed (see receive()).
  SocketReceiver pollReceiver_;
  AsideReader aside_;
  // The same with UDP_GRO on: one recvmsg may return a coalesced run, cut up by deliver().
  // `flags` 0 instead of MSG_DONTWAIT sleeps in the socket (bounded by SO_RCVTIMEO).
  Result<size_t> pollGro(DatagramSink& sink, int flags = MSG_DONTWAIT) noexcept;
  // One read of the socket, with or without sleeping: pollGro or pollReceiver_.
  Result<size_t> readSocket(DatagramSink& sink, int flags) noexcept;
  // The receive without the multishot receive: non-blocking reads until `spinUntil`, then
  // blocking reads until `deadline`.
  Result<size_t> receiveDirect(DatagramSink& sink, std::chrono::steady_clock::time_point deadline,
                               std::chrono::steady_clock::time_point spinUntil) noexcept;
  // One blocking read that returns no later than `left` from now (0 datagrams if none came).
  Result<size_t> sleepRead(DatagramSink& sink, std::chrono::nanoseconds left) noexcept;
  // SO_RCVTIMEO counts in jiffies, rounding up: the kernel's jiffy (probed in setUp) and the
  // timeout now set on the socket (0: none), so that it is set only when it changes.
  std::chrono::microseconds jiffy_{10000};
  std::chrono::microseconds rcvTimeout_{0};
  std::vector<std::byte> groPollBuffer_;  // kGroBufferBytes + 1, only while gro_
  bool armed_ = false;
};

}  // namespace lrpc::net
