// U-Net's kernel-emulated endpoint: the same behaviour as UringEndpoint over a plain UDP
// socket with recvmmsg/sendmmsg, for kernels without io_uring (or with it disabled).
#pragma once

#include <sys/socket.h>

#include <memory>
#include <vector>

#include "runtime/base/mutex.h"
#include "transport/endpoint.h"
#include "transport/udp_socket.h"

namespace lrpc::net {

// Reads without waiting (one recvmmsg, or one recvfrom) into slots of its own, each
// datagram handed to a sink: the emulated endpoint's receive queue, and the io_uring
// endpoint's busy-poll path. One thread at a time.
class SocketReceiver {
 public:
  explicit SocketReceiver(size_t maxDatagram);
  // Datagrams delivered; 0 when nothing was there (or all of it was dropped: oversized).
  // kPeerDied when the kernel reports the connected peer unreachable.
  Result<size_t> drain(int fd, DatagramSink& sink) noexcept;
  // The same for at most one datagram with one recvfrom: the cheapest look at the socket,
  // for a thread that spins on it (the batch's msghdr and iovec copies cost more than a
  // single cell's whole receive). `flags` 0 instead of MSG_DONTWAIT sleeps in the socket
  // (bounded by its SO_RCVTIMEO; 0 when that passes). `bytes`, when given, is set to the
  // length of the datagram read (0 if none), delivered or dropped.
  Result<size_t> pollOne(int fd, DatagramSink& sink, int flags = MSG_DONTWAIT, size_t* bytes = nullptr) noexcept;

 private:
  static constexpr unsigned kBatch = 16;
  size_t maxDatagram_;
  size_t slotBytes_;
  std::vector<std::byte> buffers_;  // kBatch receive slots
};

// What Endpoint::receiveAside() reads with: slots of its own, made on first use, for one
// thread at a time (another gets 0 at once instead of waiting for it).
class AsideReader {
 public:
  explicit AsideReader(size_t maxDatagram) noexcept : maxDatagram_(maxDatagram) {}
  Result<size_t> read(int fd, DatagramSink& sink) noexcept;

 private:
  size_t maxDatagram_;
  Mutex mu_;
  std::unique_ptr<SocketReceiver> receiver_ LRPC_GUARDED_BY(mu_);
};

class SocketEndpoint final : public Endpoint {
 public:
  static Result<std::unique_ptr<Endpoint>> open(const EndpointOptions& options);

  const char* kind() const noexcept override { return "emulated"; }
  NetAddress localAddress() const noexcept override { return local_; }
  Status send(std::span<const OutDatagram> batch) noexcept override;
  Result<size_t> receive(DatagramSink& sink, ReceiveMode mode, std::chrono::nanoseconds timeout) noexcept override;
  bool receivesAside() const noexcept override { return true; }
  Result<size_t> receiveAside(DatagramSink& sink) noexcept override;

 private:
  static constexpr unsigned kBatch = 16;
  SocketEndpoint(OwnedFd fd, const EndpointOptions& options);

  OwnedFd fd_;
  EndpointOptions options_;
  NetAddress local_;
  SocketReceiver receiver_;  // the receiver thread's only
  AsideReader aside_;
};

}  // namespace lrpc::net
