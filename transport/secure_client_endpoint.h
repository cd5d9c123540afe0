// The client's side of a secure session, as an Endpoint in front of the UDP endpoint: it runs
// the handshake once (Noise_IKpsk2, with the cookie round trip when the server is under load),
// then seals every datagram the channel sends and opens every one it receives. The channel
// above it (UdpChannel) sees clear lrpc datagrams and keeps all of its reliability:
// retransmissions are sealed afresh (a new counter), so the server's replay window never
// mistakes them for replays, and its at-most-once reply cache still sees the same call.
// A datagram that fails to open is dropped silently, as loss would be.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "transport/endpoint.h"
#include "transport/secure/data_channel.h"
#include "transport/secure/handshake.h"

namespace lrpc::net {

struct SecureHandshakeTiming {
  std::chrono::nanoseconds timeout = std::chrono::seconds(3);
  std::chrono::nanoseconds initialRto = std::chrono::milliseconds(10);
  std::chrono::nanoseconds maxRto = std::chrono::milliseconds(500);
  ReceiveMode mode = ReceiveMode::kBlocking;
};

class SecureClientEndpoint final : public Endpoint {
 public:
  // Completes a handshake with `server` over `inner` (connected to it). kPeerDied, saying what
  // may be wrong, when no valid reply comes within timing.timeout: a server never answers a
  // hello made for another key, or from a client key it does not list.
  static Result<std::unique_ptr<SecureClientEndpoint>> connect(std::unique_ptr<Endpoint> inner, NetAddress server,
                                                               secure::Initiator initiator,
                                                               const SecureHandshakeTiming& timing,
                                                               const secure::DataOptions& data);

  const char* kind() const noexcept override { return inner_->kind(); }
  NetAddress localAddress() const noexcept override { return inner_->localAddress(); }
  Status send(std::span<const OutDatagram> batch) noexcept override;
  Result<size_t> receive(DatagramSink& sink, ReceiveMode mode, std::chrono::nanoseconds timeout) noexcept override;

  // Datagrams dropped because they did not open (forged, replayed, stale or foreign).
  uint64_t dropped() const noexcept { return dropped_; }
  // How long the handshake took, from the first hello to the keys.
  std::chrono::nanoseconds handshakeTime() const noexcept { return handshakeTime_; }

 private:
  class OpenSink;
  SecureClientEndpoint(std::unique_ptr<Endpoint> inner, NetAddress server, secure::DataChannel channel)
      : inner_(std::move(inner)), server_(server), channel_(std::move(channel)) {}

  std::unique_ptr<Endpoint> inner_;
  NetAddress server_;
  secure::DataChannel channel_;  // seal under sendMu_; open on the (one) receiving thread
  std::mutex sendMu_;
  std::vector<uint8_t> sealed_;      // GUARDED_BY(sendMu_): a batch's sealed datagrams
  std::vector<OutDatagram> out_;     // GUARDED_BY(sendMu_)
  std::vector<uint8_t> opened_;      // the receiving thread's: one clear datagram
  uint64_t dropped_ = 0;             // the receiving thread's
  std::chrono::nanoseconds handshakeTime_{0};
};

// The bytes a cookie is bound to: the address and the port (both in network order).
std::array<uint8_t, 6> sourceBytes(NetAddress a) noexcept;

// Seals each datagram of `batch` (gathered from its pieces) with `channel`, into `storage`,
// and fills `out` with one piece each. Shared by the client and the server.
Status sealBatch(secure::DataChannel& channel, std::span<const OutDatagram> batch, std::vector<uint8_t>& storage,
                 std::vector<OutDatagram>& out) noexcept;

}  // namespace lrpc::net
