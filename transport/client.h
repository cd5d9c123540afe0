// The client half of the UDP transport: a CallChannel that carries a binding's calls to a
// UdpServer, with U-Net Active Messages' reliability at user level (session handshake with
// random cookies, sequence numbers, the reply as the request's ack, retransmission with
// exponential backoff, a bounded window of outstanding calls, selective resend of fragments).
//
// Threading: any number of threads may call concurrently. There is no transport thread:
// the callers take turns polling the endpoint (leader/followers), so a single caller's
// call is one send and one receive on its own thread, with nothing handed between threads.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "runtime/base/mutex.h"
#include "runtime/remote_call.h"
#include "runtime/send_batch.h"
#include "transport/buffer_shelf.h"
#include "transport/endpoint.h"
#include "transport/fragment.h"
#include "transport/fragment_batch.h"
#include "transport/security.h"
#include "transport/wire.h"

namespace lrpc::net {

struct ReverseSetup;      // transport/callback_host.h
class NetCallbackHost;    // transport/callback_host.h

struct ClientOptions {
  ReceiveMode mode = ReceiveMode::kAdaptive;
  bool emulatedEndpoint = false;  // plain sockets even where io_uring works
  std::chrono::nanoseconds spinBeforeBlock = std::chrono::microseconds(50);  // adaptive mode
  uint32_t window = 32;                     // calls outstanding at most (callers wait beyond)
  std::chrono::nanoseconds initialRto = std::chrono::milliseconds(10);
  std::chrono::nanoseconds maxRto = std::chrono::milliseconds(500);
  // Retransmissions without any sign of life before kPeerDied (about 4 s with the above).
  // A server that answers "still running" (a long handler) resets the count: only silence,
  // or the call's own deadline, ends a call.
  uint32_t maxRetries = 12;
  std::chrono::nanoseconds connectTimeout = std::chrono::seconds(3);
  size_t maxDatagram = kDefaultMaxDatagram;
  size_t maxMessageBytes = (64u << 20) + (1u << 20);  // largest reply accepted
  uint32_t fragmentWindow = 1024;                     // fragments in flight per message (<= kAckBits)
  // Message buffers of finished calls kept for the next large request or reply (each
  // between 64 KiB and one that holds a payload of this size, at most two): a stream of large
  // calls then reuses pages already faulted in. The default covers the largest message the
  // transport is built for, so a channel that made 64 MiB calls holds up to about 130 MiB
  // between them; lower it to trade that memory for page faults. 0 keeps none.
  size_t keepBufferBytes = 64u << 20;
  // The first call's sequence number (then +1 per call, modulo 2^32). Tests start near the
  // wrap; nothing else needs to change it.
  uint32_t firstSequence = 1;
  // The server key to pin and this client's identity (transport/security.h), or the
  // clear-text opt-in. Used by connect(); UdpChannel::open() takes the endpoint as given.
  // Secure sessions carry 32 bytes more per datagram: the channel offers maxDatagram - 32.
  ClientSecurity security;
};

// kInvalidArgument, naming the option, when `options` cannot work.
Status validate(const ClientOptions& options);

// Owned by a shared_ptr (open() makes it so): a SendBatch keeps it weakly while it holds
// requests for the batch (runtime/send_batch.h).
class UdpChannel final : public CallChannel,
                         public detail::HeldSends,
                         public std::enable_shared_from_this<UdpChannel> {
 public:
  // Performs the handshake over `endpoint` with the server at `server` for the interface
  // exported as `name`. kInvalidArgument (bad options, or a name the same host would refuse
  // too: runtime/names.h), kBindingRejected (interface mismatch, naming both sides),
  // kNotFound (no such name) or kPeerDied (no answer within connectTimeout).
  //
  // A channel whose server lost the session (restarted, or evicted it) fails the calls then
  // in flight with kPeerDied (they may have run) and opens a new session, once, for the next
  // call. A channel whose server went silent or unreachable fails every later call at once
  // with kPeerDied: connect again for a new channel.
  static Result<std::shared_ptr<UdpChannel>> open(std::unique_ptr<Endpoint> endpoint, NetAddress server,
                                                  std::string_view name, const InterfaceDescriptor& iface,
                                                  const ClientOptions& options = {});
  ~UdpChannel() override;

  Status call(const InterfaceDescriptor& iface, uint32_t procedure, const OutMessage& request, MessageBuffer& reply,
              const CallOptions& options) noexcept override;
  // A reply of at least kApartBytes is reassembled with its tail straight in `tail`.
  Status callApart(const InterfaceDescriptor& iface, uint32_t procedure, const OutMessage& request,
                   MessageBuffer& reply, size_t fixedBytes, std::vector<uint8_t>& tail, bool* apart,
                   const CallOptions& options) noexcept override;
  static constexpr size_t kApartBytes = RemoteCall::kBorrowBytes;
  // Sends the call and returns at once (the window permitting: beyond it the caller polls
  // the endpoint until a slot is free, or the call's deadline). Whoever awaits a call polls
  // the endpoint for every call of the channel.
  Result<std::unique_ptr<ChannelCall>> startAsync(const InterfaceDescriptor& iface, uint32_t procedure,
                                                  const OutMessage& request, MessageBuffer& reply,
                                                  const CallOptions& options, lrpc::detail::Reclaim reclaim) noexcept override;
  void lend(MessageBuffer& buffer, size_t bytes) noexcept override;
  void recycle(MessageBuffer& buffer) noexcept override;
  // Objects of this process passed to the server (callbacks): served by a NetCallbackHost
  // that the first of them starts (transport/callback_host.h). Only on a channel given the
  // keys for that direction (connect() does so; open() alone does not).
  Result<uint32_t> exportCallback(const Binding& conn, const HostedObject& object) noexcept override;
  Result<HostedObject> findCallback(uint32_t id, uint64_t ifaceId) const noexcept override;
  // The server ends sessions it hears nothing from for its sessionTimeout (the welcome says
  // how long): from the first object received or passed on, a thread of the channel sends a
  // keepalive whenever a third of that has passed with nothing sent, for the channel's life.
  void keepAlive() noexcept override;
  // Read on every call on a received capability, so an atomic rather than under mu_. A
  // callback host (the server's channel back to its client) keeps one table for all its
  // sessions: its ids outlive them.
  uint32_t sessionsEnded() const noexcept override {
    return capsOutliveSessions_ ? 0 : sessionsEnded_.load(std::memory_order_relaxed);
  }
  void enableCallbacks(std::unique_ptr<ReverseSetup> setup) noexcept;

  const char* endpointKind() const noexcept { return endpoint_->kind(); }
  uint32_t session() const noexcept { return session_; }
  // Counters, for tests and tuning (U-Net exposes these to the application too).
  struct Stats {
    uint64_t calls = 0;
    uint64_t retransmits = 0;
    uint64_t dropped = 0;  // datagrams that failed validation or matched no call
    uint64_t running = 0;  // "still running" answers from the server (long handlers)
    uint64_t sessions = 0;  // sessions opened (1, plus one per re-handshake)
    uint64_t requestSends = 0;  // endpoint sends of new requests (a SendBatch's burst is one)
    uint64_t releasesCarried = 0;  // objects of our callback host released by replies (kFlagReleases)
    uint64_t keepalives = 0;  // keepalives sent (keepAlive())
  };
  Stats stats() const;

  struct Pending;  // one call in flight (lives on its caller's stack)

  // Sends the requests held for a SendBatch (runtime/send_batch.h), in one system call.
  void sendHeld() noexcept override;

 private:
  class Sink;
  class Started;  // startAsync's ChannelCall
  UdpChannel(std::unique_ptr<Endpoint> endpoint, NetAddress server, const ClientOptions& options);
  Status handshake(std::string_view name, const InterfaceDescriptor& iface) LRPC_REQUIRES(mu_);
  // call() and callApart(): `p` is set up with the reply's destinations.
  Status run(uint32_t procedure, Pending& p, const OutMessage& request, const CallOptions& options) noexcept;
  // run()'s first half: waits for a window slot and sends the request.
  Status begin(uint32_t procedure, Pending& p, const OutMessage& request, const CallOptions& options) noexcept;
  // Started's: p's status once it has finished (its slot then let go), polling the endpoint
  // until `untilNs` (monotonic, 0: one look) at most; and giving p up (kCancelled).
  std::optional<Status> progress(Pending& p, int64_t untilNs) noexcept;
  void abandon(Pending& p) noexcept;
  // A synchronous call's status, after the releases its reply carried are made and the
  // objects we passed are dropped if it says the server is gone for good (no lock held).
  Status afterCall(Pending& p, Status s) noexcept;
  // Leads once (lead) if no other thread polls, mu_ released meanwhile; false if another does.
  // Callbacks that arrived for our host meanwhile run here, after pollMu_ is let go (a
  // callback may call through this channel).
  bool leadIfFree(Pending& self, std::chrono::nanoseconds maxWait) LRPC_REQUIRES(mu_);
  // Polls the endpoint once as the leader, waiting `maxWait` at most: delivers replies, runs timers.
  // `owed`: releases that replies of given-up calls brought (collectOwed), for the caller to make
  // with no lock held. With `host`, while it spins it also reads the host's socket, and
  // returns true as soon as something came there.
  bool lead(Pending& self, std::chrono::nanoseconds maxWait, std::vector<uint32_t>& owed, NetCallbackHost* host)
      LRPC_REQUIRES(pollMu_) LRPC_EXCLUDES(mu_);
  // The spinning part of lead() with a host: our socket and the host's in turns, then (in
  // adaptive mode) a sleep on ours alone. `hostGot`: something came for the host.
  Result<size_t> receiveBeside(DatagramSink& sink, NetCallbackHost& host, std::chrono::nanoseconds timeout,
                               bool& hostGot) noexcept;
  // The host lead() reads beside the channel, if any (a reference for the caller to hold).
  std::shared_ptr<NetCallbackHost> asideHost() noexcept LRPC_EXCLUDES(asideMu_);
  void setAsideHost(std::shared_ptr<NetCallbackHost> host) noexcept LRPC_EXCLUDES(asideMu_);
  // Releases objects of our callback host that the server dropped (no lock held).
  void releaseHosted(std::span<const uint32_t> ids) noexcept;
  void owe(uint32_t seq) noexcept LRPC_REQUIRES(mu_);  // call `seq` was given up
  // A reply with releases for a call that has finished; kept if it was given up.
  void collectOwed(uint32_t seq, std::span<const std::byte> payload) noexcept LRPC_REQUIRES(mu_);
  void onDatagram(const Datagram& d) noexcept LRPC_REQUIRES(mu_);
  void onTimers(std::chrono::steady_clock::time_point now) noexcept LRPC_REQUIRES(mu_);
  void sendRequest(Pending& p, bool resend) noexcept LRPC_REQUIRES(mu_);
  PacketHeader requestHeader(const Pending& p) const noexcept LRPC_REQUIRES(mu_);
  // Keeps p's request for the thread's SendBatch, if it has one (true).
  bool holdForBatch(const Pending& p) noexcept LRPC_REQUIRES(mu_);
  void sendHeldLocked() noexcept LRPC_REQUIRES(mu_);
  void sendAck(uint32_t seq, const AckBody& ack, bool resend = false) noexcept;
  void sendCancel(uint32_t seq) noexcept LRPC_REQUIRES(mu_);
  void finish(Pending& p, Status s) noexcept LRPC_REQUIRES(mu_);
  void failAll(const Status& s) noexcept LRPC_REQUIRES(mu_);
  void die(Status s) noexcept LRPC_REQUIRES(mu_);  // the peer is gone
  // Every slot empty: opens a new session for a lost one (mu_ let go and taken again).
  Status rehandshake() LRPC_REQUIRES(mu_);
  // The server has lost the session (or may have, after a long silence): the next call opens
  // a new one, and capabilities received on this one fail from now on (sessionsEnded()).
  void loseSession() noexcept LRPC_REQUIRES(mu_);
  // Whether the server may have ended the session for silence by now (sessionTimeout).
  bool silentTooLong(int64_t nowNs) const noexcept LRPC_REQUIRES(mu_);
  void keep() noexcept;  // the keepalive thread's loop

  std::unique_ptr<Endpoint> endpoint_;
  NetAddress server_;
  ClientOptions options_;
  uint32_t session_ = 0;
  uint64_t cookie_ = 0;
  uint32_t window_ = 1;
  size_t fragmentBytes_ = 0;
  std::string name_;                     // what the handshake asked for, for a re-handshake
  const InterfaceDescriptor* iface_ = nullptr;

  Mutex pollMu_;  // held by the thread that polls the endpoint (the leader); taken before mu_
  mutable Mutex mu_;
  CondVar cv_;  // a call finished, a window slot freed, or leadership free
  std::vector<Pending*> slots_ LRPC_GUARDED_BY(mu_);  // index seq % window_
  size_t live_ LRPC_GUARDED_BY(mu_) = 0;              // calls in slots_ not finished yet
  size_t occupied_ LRPC_GUARDED_BY(mu_) = 0;          // calls in slots_, finished or not
  uint32_t nextSeq_ LRPC_GUARDED_BY(mu_) = 1;
  Status dead_ LRPC_GUARDED_BY(mu_);                  // set once the peer is known gone
  bool lost_ LRPC_GUARDED_BY(mu_) = false;            // the server lost the session; re-handshake
  std::atomic<uint32_t> sessionsEnded_{0};            // times loseSession() set lost_
  bool capsOutliveSessions_ = false;                  // set in open(), then read only
  Stats stats_ LRPC_GUARDED_BY(mu_);
  std::vector<uint32_t> held_ LRPC_GUARDED_BY(mu_);   // sequence numbers of requests held for a batch
  // Calls given up (cancelled, past their deadline) whose replies may carry releases.
  static constexpr size_t kOwedCalls = 32;
  std::vector<uint32_t> owed_ LRPC_GUARDED_BY(mu_);
  std::vector<uint32_t> releasesOwed_ LRPC_GUARDED_BY(mu_);  // their releases, for the next leader to make
  std::vector<uint32_t> scratch_ LRPC_GUARDED_BY(mu_);       // fragment lists
  FragmentBatch batch_ LRPC_GUARDED_BY(mu_);                 // their datagrams

  BufferShelf shelf_;  // lend() and recycle(); its lock is taken after mu_ when both are held

  // The reverse direction: set up before the channel is shared, then read only.
  std::unique_ptr<ReverseSetup> reverse_;
  mutable Mutex callbacksMu_;  // held while the host starts and tells the server; taken before mu_
  std::shared_ptr<NetCallbackHost> callbackHost_ LRPC_GUARDED_BY(callbacksMu_);
  uint32_t attachedSession_ LRPC_GUARDED_BY(callbacksMu_) = 0;  // the session told of it
  // The same host for the leader, which reads its socket while it waits (lead()), when the
  // host's endpoint allows it: under a lock of its own, because callbacksMu_ is held across
  // the call that tells the server of a new host. Taken after pollMu_ and callbacksMu_.
  Mutex asideMu_;
  std::shared_ptr<NetCallbackHost> asideHost_ LRPC_GUARDED_BY(asideMu_);
  std::atomic<bool> hasAsideHost_{false};  // asideHost_ is set: a hint, checked before the lock

  // Keepalives. The server's sessionTimeout, from the session's welcome (0: never).
  int64_t idleTimeoutNs_ LRPC_GUARDED_BY(mu_) = 0;
  // When a request or keepalive last went out (coarse monotonic ns). Relaxed: only a hint
  // for when to send the next keepalive, or to open a new session before a call.
  std::atomic<int64_t> sentNs_{0};
  std::atomic<bool> keeping_{false};  // keepAlive() was called: a hint, checked before the lock
  Mutex keeperMu_;  // taken before mu_
  CondVar keeperCv_;
  bool keeperStop_ LRPC_GUARDED_BY(keeperMu_) = false;
  std::thread keeper_ LRPC_GUARDED_BY(keeperMu_);
};

// The URI form: "udp://host:port/name?key=<server public key>" (authenticated and encrypted:
// a Noise_IKpsk2 handshake, then every datagram sealed) or "udp+clear://host:port/name"
// (clear text, the explicit opt-in). Opens an endpoint (io_uring or emulated), shakes hands,
// connects and returns a remote Binding whose owner keeps the channel alive.
Result<std::shared_ptr<Binding>> connect(std::string_view uri, const InterfaceDescriptor& iface,
                                         const ClientOptions& options = {});

// Typed form: lrpc::net::connect<paper::Paper>("udp://10.0.0.1:7000/paper?key=...").
template <class Service>
Result<typename Service::Client> connect(std::string_view uri, const ClientOptions& options = {}) {
  auto binding = connect(uri, Service::kDescriptor, options);
  if (!binding) return binding.status();
  return typename Service::Client(std::move(*binding));
}

// Splits "udp://host:port/name?key=K" or "udp+clear://host:port/name" into its parts.
struct UdpUri {
  std::string hostPort;
  std::string name;
  std::string key;     // the text of ?key=, or empty
  bool clear = false;  // udp+clear://
};
Result<UdpUri> parseUdpUri(std::string_view uri);

}  // namespace lrpc::net
