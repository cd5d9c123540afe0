// The client's side of a secure session, as an Endpoint in front of the UDP endpoint: it runs
// the handshake once (Noise_IKpsk2, with the cookie round trip when the server is under load),
// then seals every datagram the channel sends and opens every one it receives. The channel
// above it (UdpChannel) sees clear lrpc datagrams and keeps all of its reliability:
// retransmissions are sealed afresh (a new counter), so the server's replay window never
// mistakes them for replays, and its at-most-once reply cache still sees the same call.
// A datagram that fails to open is dropped silently, as loss would be.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include "runtime/base/mutex.h"
#include "transport/endpoint.h"
#include "transport/secure/data_channel.h"
#include "transport/secure/handshake.h"

namespace lrpc::net {

struct SecureHandshakeTiming {
  std::chrono::nanoseconds timeout = std::chrono::seconds(3);
  std::chrono::nanoseconds initialRto = std::chrono::milliseconds(10);
  std::chrono::nanoseconds maxRto = std::chrono::milliseconds(500);
  ReceiveMode mode = ReceiveMode::kBlocking;
  // While datagrams go out and no authentic one comes back for this long, send a new hello
  // (at most once per this period): a server that restarted has lost our keys and drops
  // everything we seal, so only a new handshake lets the channel hear its kReset.
  std::chrono::nanoseconds rehandshakeAfter = std::chrono::seconds(1);
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
  // Handshakes completed after the first (the server had lost our keys, or a reply was lost).
  uint64_t rehandshakes() const noexcept { return rehandshakes_.load(std::memory_order_relaxed); }

 private:
  class OpenSink;
  SecureClientEndpoint(std::unique_ptr<Endpoint> inner, NetAddress server, secure::Initiator initiator,
                       secure::DataChannel channel)
      : inner_(std::move(inner)), server_(server), initiator_(std::move(initiator)), channel_(std::move(channel)) {}
  // After a send: a new hello when the server has been silent too long.
  void maybeRehandshake(std::chrono::steady_clock::time_point now) noexcept LRPC_REQUIRES(sendMu_);
  // The receiving thread: a handshake reply to our last new hello.
  void onReply(secure::Bytes reply) noexcept;

  std::unique_ptr<Endpoint> inner_;
  NetAddress server_;
  SecureHandshakeTiming timing_;
  Mutex helloMu_;  // initiator_ (written to by send, read by receive)
  secure::Initiator initiator_ LRPC_GUARDED_BY(helloMu_);
  bool helloOut_ LRPC_GUARDED_BY(helloMu_) = false;  // a new hello awaits its reply
  Mutex sendMu_;
  // Sealed with sendMu_ held. Opened by the one receiving thread, which alone replaces it (with
  // sendMu_ held): that thread reads it through opening() without the lock.
  secure::DataChannel channel_ LRPC_GUARDED_BY(sendMu_);
  secure::DataChannel& opening() LRPC_NO_THREAD_SAFETY_ANALYSIS { return channel_; }
  secure::DataOptions data_;
  // Set at a send with nothing authentic heard since the last; cleared by an authentic datagram.
  std::atomic<bool> waiting_{false};
  std::chrono::steady_clock::time_point waitingSince_ LRPC_GUARDED_BY(sendMu_){};
  std::chrono::steady_clock::time_point lastHello_ LRPC_GUARDED_BY(sendMu_){};
  std::chrono::steady_clock::time_point lastSend_ LRPC_GUARDED_BY(sendMu_){};
  std::atomic<uint64_t> rehandshakes_{0};
  std::vector<uint8_t> sealed_ LRPC_GUARDED_BY(sendMu_);  // a chunk's sealed datagrams
  std::vector<OutDatagram> out_ LRPC_GUARDED_BY(sendMu_);
  std::vector<uint8_t> opened_;      // the receiving thread's: one clear datagram
  uint64_t dropped_ = 0;             // the receiving thread's
  std::chrono::nanoseconds handshakeTime_{0};
};

// The bytes a cookie is bound to: the address and the port (both in network order).
std::array<uint8_t, 6> sourceBytes(NetAddress a) noexcept;

// Seals the datagrams of `batch` (each gathered from its pieces) with `channel` and sends them
// through `inner`, kSealChunk at a time, through `storage` and `out`. Chunked so that the
// receiver opens the first datagrams of a large message while the rest are sealed: sealing
// a whole window first left the two sides taking turns. Shared by the client and the server.
inline constexpr size_t kSealChunk = 32;
Status sealAndSend(secure::DataChannel& channel, std::span<const OutDatagram> batch, Endpoint& inner,
                   std::vector<uint8_t>& storage, std::vector<OutDatagram>& out,
                   std::chrono::steady_clock::time_point now) noexcept;

}  // namespace lrpc::net
