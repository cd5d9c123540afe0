// The server's side of secure sessions, as an Endpoint in front of the UDP endpoint. It
// answers handshakes itself (so nothing reaches the UdpServer, and no session of its is
// allocated, before a client has authenticated), opens every data datagram and hands the
// clear lrpc datagram on, and seals every datagram the UdpServer sends to a client.
//
// Sessions, by receiver index:
//   pending    a handshake completed (the hello was authentic, its key allowed, its timestamp
//              fresh) but no datagram under the new keys has come yet: its own bounded pool
//              (maxPending, oldest out first);
//   confirmed  a datagram under the keys opened, so the client holds them and receives at
//              its address. One per client address (a new confirmed session at an address
//              replaces the old one: the same socket shook hands again); bounded by
//              maxSessions, least recently active out first.
// Neither is made or touched by a datagram that does not authenticate, so unauthenticated
// traffic can never evict a session. Under load the responder asks for a cookie first and
// rate-limits handshakes per source (transport/secure/handshake.h).
//
// Threading: receive() on one thread at a time, receiveAside() beside it; each datagram is
// opened under receiveMu_, and only then are the tables changed (under mu_ as well). send()
// on any thread (it reads the tables under mu_, then seals under the session's own lock).
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "runtime/base/mutex.h"
#include "transport/endpoint.h"
#include "transport/secure/data_channel.h"
#include "transport/secure/handshake.h"
#include "transport/security.h"

namespace lrpc::net {

class SecureServerEndpoint final : public Endpoint {
 public:
  using Stats = SecureServerStats;

  static Result<std::unique_ptr<SecureServerEndpoint>> create(std::unique_ptr<Endpoint> inner, ServerKeys keys,
                                                              const ServerSecurity& security);
  ~SecureServerEndpoint() override;

  const char* kind() const noexcept override { return inner_->kind(); }
  NetAddress localAddress() const noexcept override { return inner_->localAddress(); }
  Status send(std::span<const OutDatagram> batch) noexcept override;
  Result<size_t> receive(DatagramSink& sink, ReceiveMode mode, std::chrono::nanoseconds timeout) noexcept override;
  bool receivesAside() const noexcept override { return inner_->receivesAside(); }
  Result<size_t> receiveAside(DatagramSink& sink) noexcept override;

  const secure::PublicKey& publicKey() const noexcept { return self_.publicKey(); }
  // The static key that the client at `peer` proved, while it has a confirmed session.
  std::optional<secure::PublicKey> clientKeyOf(NetAddress peer) const;
  Stats stats() const;

 private:
  class OpenSink;
  struct Session {
    explicit Session(secure::DataChannel c) : channel(std::move(c)) {}
    secure::DataChannel channel;
    uint32_t index = 0;
    NetAddress peer;
    secure::PublicKey client;  // the static key its handshake proved
    bool confirmed = false;
    uint64_t lastActive = 0;  // the receive tick of its last authentic datagram
    Mutex sendMu;  // seal() and the storage below
    std::vector<uint8_t> sealed LRPC_GUARDED_BY(sendMu);
    std::vector<OutDatagram> out LRPC_GUARDED_BY(sendMu);
  };
  SecureServerEndpoint(std::unique_ptr<Endpoint> inner, secure::KeyPair self, bool clearText, const ServerSecurity& s);

  void onDatagram(const Datagram& d, DatagramSink& next, size_t& delivered) noexcept LRPC_REQUIRES(receiveMu_);
  void onHello(const Datagram& d) noexcept LRPC_REQUIRES(receiveMu_);
  void onData(const Datagram& d, DatagramSink& next, size_t& delivered) noexcept LRPC_REQUIRES(receiveMu_);
  // The tables change only under both locks: the receiving thread may then read them with
  // receiveMu_ alone (sessionAt).
  void confirm(const std::shared_ptr<Session>& s) noexcept LRPC_REQUIRES(receiveMu_, mu_);
  void erase(uint32_t index) noexcept LRPC_REQUIRES(receiveMu_, mu_);
  // The session a data datagram names, or null; read by the receiving thread without mu_.
  Session* sessionAt(uint32_t index) const noexcept LRPC_REQUIRES(receiveMu_) LRPC_NO_THREAD_SAFETY_ANALYSIS {
    auto it = byIndex_.find(index);
    return it == byIndex_.end() ? nullptr : it->second.get();
  }

  std::unique_ptr<Endpoint> inner_;
  secure::KeyPair self_;
  // The receiving side: one datagram at a time, from receive() or receiveAside(). Taken
  // before mu_, the UdpServer's lock (the opened datagram goes on under it) and sendMu.
  Mutex receiveMu_;
  std::optional<secure::Responder> responder_ LRPC_GUARDED_BY(receiveMu_);
  bool clearText_;
  uint32_t maxPending_;
  uint32_t maxSessions_;
  secure::DataOptions data_;

  mutable Mutex mu_;  // the tables; written only under receiveMu_ too
  std::unordered_map<uint32_t, std::shared_ptr<Session>> byIndex_ LRPC_GUARDED_BY(mu_);  // pending and confirmed
  std::unordered_map<uint64_t, std::shared_ptr<Session>> byPeer_ LRPC_GUARDED_BY(mu_);   // confirmed, by address
  // Oldest first (entries of confirmed or erased ones are skipped).
  std::deque<uint32_t> pendingOrder_ LRPC_GUARDED_BY(mu_);
  size_t pending_ LRPC_GUARDED_BY(mu_) = 0;
  uint64_t tick_ LRPC_GUARDED_BY(receiveMu_) = 0;
  std::vector<uint8_t> opened_ LRPC_GUARDED_BY(receiveMu_);  // one clear datagram
  std::atomic<uint64_t> handshakes_{0}, cookieReplies_{0}, refusedHellos_{0}, droppedData_{0}, confirmed_{0};
};

}  // namespace lrpc::net
