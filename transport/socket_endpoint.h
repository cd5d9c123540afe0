// U-Net's kernel-emulated endpoint: the same behaviour as UringEndpoint over a plain UDP
// socket with recvmmsg/sendmmsg, for kernels without io_uring (or with it disabled).
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "transport/endpoint.h"
#include "transport/udp_socket.h"

namespace lrpc::net {

class SocketEndpoint final : public Endpoint {
 public:
  static Result<std::unique_ptr<Endpoint>> open(const EndpointOptions& options);

  const char* kind() const noexcept override { return "emulated"; }
  NetAddress localAddress() const noexcept override { return local_; }
  Status send(std::span<const OutDatagram> batch) noexcept override;
  Result<size_t> receive(DatagramSink& sink, ReceiveMode mode, std::chrono::nanoseconds timeout) noexcept override;

 private:
  static constexpr unsigned kBatch = 16;
  SocketEndpoint(OwnedFd fd, const EndpointOptions& options);
  // One recvmmsg without waiting; delivers what it got. 0 when nothing was there.
  Result<size_t> drain(DatagramSink& sink) noexcept;

  OwnedFd fd_;
  EndpointOptions options_;
  NetAddress local_;
  size_t slotBytes_;
  std::vector<std::byte> buffers_;  // kBatch receive slots (the receiver thread's only)
};

}  // namespace lrpc::net
