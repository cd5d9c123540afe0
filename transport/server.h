// The server half of the UDP transport. One endpoint and a pool of `workers` threads that take
// turns (leader/followers): one of them polls the endpoint and runs the handlers of the calls
// it received itself, so a fast call is handed between no threads. A handler that runs long
// is noticed by an idle pool thread, which takes over polling; the slow handler's thread joins
// the idle ones when it is done. Many clients and sessions; each session keeps a reply cache
// of `window` slots so that a duplicate request is answered from the cache (or, while its
// handler runs, with "still running") and every call executes at most once.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "runtime/base/mutex.h"
#include "runtime/cap_table.h"
#include "runtime/capability.h"
#include "runtime/remote_call.h"
#include "runtime/server_call.h"
#include "transport/buffer_shelf.h"
#include "transport/endpoint.h"
#include "transport/fragment.h"
#include "transport/fragment_batch.h"
#include "transport/netns.h"
#include "transport/security.h"
#include "transport/wire.h"

namespace lrpc::net {

struct ServerOptions {
  ReceiveMode mode = ReceiveMode::kAdaptive;
  bool emulatedEndpoint = false;  // plain sockets even where io_uring works
  std::chrono::nanoseconds spinBeforeBlock = std::chrono::microseconds(50);
  uint32_t window = 32;          // largest call window granted per session
  size_t maxDatagram = kDefaultMaxDatagram;
  size_t maxMessageBytes = (64u << 20) + (1u << 20);  // largest request accepted
  uint32_t fragmentWindow = 1024;  // reply fragments in flight (<= kAckBits)
  // Established sessions (the client has made a call, so it receives at its address):
  // beyond this the least recently used one is dropped.
  uint32_t maxSessions = 4096;
  // Sessions welcomed but not yet used, which anyone can open with one datagram: beyond this
  // the oldest of them is dropped. They never push out an established session, and cost no
  // reply cache until their first call.
  uint32_t maxHalfOpen = 1024;
  // A session whose client has sent nothing for this long, and on which no handler runs, is
  // ended: its reply cache and the objects it holds go, so a client that died without a bye
  // (killed, or its host gone) costs the server nothing after it. Clients that hold objects
  // of the session send keepalives at a third of it (the welcome tells them); one that holds
  // none opens a new session by itself when it calls again. 0: sessions never time out.
  std::chrono::milliseconds sessionTimeout{60'000};
  // Handlers that may run at once (1..256), each on a thread of the server's pool. The thread
  // that polls runs a due handler itself; while a handler runs longer than `takeoverAfter`,
  // an idle thread takes over polling. The pool has one thread more than this, so that with
  // every handler slot taken one thread still reads the socket: handshakes, acks, releases
  // and the "still running" answers to retransmissions go on, and new calls wait their turn.
  uint32_t workers = 4;
  std::chrono::milliseconds takeoverAfter{5};
  uint32_t receiveBuffers = 512;
  // UDP_GRO on the socket (io_uring endpoint; EndpointOptions::gro). A callback host turns it
  // off so that its waiting caller can read the socket too (takeArrived()).
  bool gro = true;
  // Reply buffers of delivered calls kept for the next large reply (at most two per server,
  // each holding a payload of at most this size; see BufferShelf and ClientOptions). 0 keeps
  // none.
  size_t keepBufferBytes = 64u << 20;
  // Capabilities one session may hold on this server at once (runtime/capability.h); beyond
  // them a call that would hand out one more fails with kResourceExhausted.
  uint32_t maxCapabilities = 4096;
  // Keys and accepted clients for authenticated, encrypted sessions (transport/security.h),
  // or the explicit clear-text opt-in. Used by bind(); attach() takes the endpoint as given.
  // Secure sessions carry 32 bytes more per datagram: bind() offers peers maxDatagram - 32.
  ServerSecurity security;
};

// kInvalidArgument, naming the option, when `options` cannot work.
Status validate(const ServerOptions& options);

class SecureServerEndpoint;

class UdpServer {
 public:
  explicit UdpServer(ServerOptions options = {});
  ~UdpServer();  // stops the thread
  UdpServer(const UdpServer&) = delete;
  UdpServer& operator=(const UdpServer&) = delete;

  // Exports `server` (a Foo::Server*, as the generated dispatch expects) under `name`.
  // Only before start(). kAlreadyExists for a duplicate name.
  Status add(std::string_view name, const InterfaceDescriptor& iface, void* server);
  template <class Service>
  Status add(std::string_view name, typename Service::Server& impl) {
    return add(name, Service::kDescriptor, static_cast<typename Service::Server*>(&impl));
  }

  // Opens the UDP endpoint ("0.0.0.0:7000"; port 0 picks one) and returns the port.
  // kInvalidArgument when the options are invalid (see validate()).
  Result<uint16_t> bind(std::string_view address);
  // Or serve on an endpoint made elsewhere (the in-memory loopback in tests).
  void attach(std::unique_ptr<Endpoint> endpoint);
  // Serves on a thread of its own until stop() (or the destructor).
  Status start();
  void stop();
  // Or drive the loop from the caller's thread (instead of start()): waits up to `timeout`
  // for datagrams and handles them. Used by the packet fuzzer and single-threaded tests.
  Result<size_t> pollOnce(std::chrono::nanoseconds timeout) noexcept;

  NetAddress address() const noexcept;
  const char* endpointKind() const noexcept;
  // The server's static public key (what clients pin), when bind() made it secure.
  std::optional<secure::PublicKey> publicKey() const noexcept;
  // The secure endpoint's counters (handshakes, refusals, drops), when bind() made it secure.
  std::optional<SecureServerStats> secureStats() const;
  // Calls executed so far (each distinct request at most once).
  uint64_t executed() const noexcept { return executed_.load(std::memory_order_relaxed); }
  // Every session keeps the capabilities it is given in `table` instead of a table of its
  // own: a callback host (transport/callback_host.h), whose ids exist before its one peer's
  // session does. Only before start().
  void shareCapabilities(std::shared_ptr<CapTable> table) noexcept { sharedCaps_ = std::move(table); }
  // Whether `id` is one of the server's threads.
  bool runsOn(std::thread::id id) const noexcept;
  // For a thread of this process that is not the server's and waits for a call whose
  // handler calls this server (the caller of a callback host, transport/callback_host.h):
  // whether it can look at the socket (Endpoint::receivesAside), a look without waiting
  // that takes what has arrived (true if anything did), and the calls that wait to run, run
  // in the calling thread. The server's own threads serve the rest as usual.
  bool receivesAside() const noexcept;
  bool takeArrived() noexcept;
  void runArrived() noexcept;
  // The waiting caller reads the socket (takeArrived) at `now`, or no longer (nullopt): for
  // a while after the last such read, a server thread about to sleep in the socket sleeps off
  // it instead, so that datagrams the caller takes do not wake it, across cores, for nothing.
  void readingAside(std::optional<std::chrono::steady_clock::time_point> now) noexcept;
  // Sessions held (established and half-open) and, of them, the half-open ones.
  size_t sessionCount() const noexcept { return sessionCount_.load(std::memory_order_relaxed); }
  size_t halfOpenCount() const noexcept { return halfOpenCount_.load(std::memory_order_relaxed); }

 private:
  struct Service {
    const InterfaceDescriptor* iface;
    void* server;
  };
  enum class SlotState : uint8_t { kEmpty, kReceiving, kRunning, kDone, kDelivered };
  // A deferred call's tie to its slot (transport/server_call.cc). Its answer is made here, by
  // whoever answers, and moved into the slot under mu_ if the slot is still the call's: a
  // client that gave the call up sends a newer one into the slot, which then takes it.
  struct DeferLink {
    lrpc::detail::DeferRace race;  // the second of answer and dispatch finishes the job
    WrittenUnder<bool> detached;        // set under mu_: the slot went to a newer call
    Status status;                      // the answer (written before race.answered())
    MessageBuffer reply;
    std::unique_ptr<KeptResult> kept;
    size_t keptAt = 0;
  };
  // Whether the server still sends answers: deferred replies may come after stop().
  struct Life {
    Mutex mu;
    bool alive LRPC_GUARDED_BY(mu) = true;
  };
  struct Slot {
    uint32_t seq = 0;
    SlotState state = SlotState::kEmpty;
    uint16_t procedure = 0;
    uint8_t status = 0;
    bool fragmentedReply = false;
    uint8_t replyFlags = 0;  // kFlagReleases when the reply ends with releases
    // The request's frame: reassembled, or copied out of the receive buffer (the handler runs
    // after the receive returns, possibly while another thread polls).
    std::unique_ptr<MessageBuffer> request;
    Reassembly reassembly;
    MessageBuffer reply;                     // the cached reply payload (results or error text)
    std::unique_ptr<KeptResult> kept;        // a large result value, sent in place of reply[keptAt, ...)
    size_t keptAt = 0;
    FragmentSender sender;
    // Set by a cancel packet while the handler runs (another thread, under the server's mu_):
    // callCancelled().
    WrittenUnder<bool> cancelled;
    // The deferred call that holds the slot (kRunning) until it is answered. The server's mu_
    // guards it: the handler's thread sets it, the answering thread and the poller clear it.
    Guarded<std::shared_ptr<DeferLink>> deferred;
  };
  // The reverse direction of one session: a channel to the client's callback host, opened
  // when the client asks (kAttachCallbacks), shared with the handlers like the caps.
  struct PeerCallbacks {
    NetAddress peer;
    Mutex mu;  // held while the channel is opened
    std::shared_ptr<Binding> binding LRPC_GUARDED_BY(mu);
    uint16_t port LRPC_GUARDED_BY(mu) = 0;  // the binding's
  };
  struct Session {
    uint32_t id;
    uint64_t cookie;
    uint64_t nonce;
    NetAddress peer;
    const Service* service;
    uint32_t window;
    size_t fragmentBytes;
    uint64_t lastActive;
    int64_t heardNs = 0;  // coarse monotonic time of the last datagram from the client
    bool established = false;  // a call came with the cookie: the peer receives at its address
    // Allocated at the first call, so that a half-open session costs no reply cache. Shared
    // with the handlers running on it, which may outlive the session (bye, eviction).
    std::shared_ptr<Slot[]> slots;
    // The objects this session's client may call by id, made with the slots and shared the
    // same way: released when the session ends and its running handlers are done.
    std::shared_ptr<CapTable> caps;
    std::shared_ptr<PeerCallbacks> callbacks;
  };
  // A request whose handler is due: run by the polling thread once its receive returns.
  struct Job {
    uint32_t session;
    const Service* service;
    std::shared_ptr<Slot[]> slots;
    Slot* slot;
    std::shared_ptr<CapTable> caps;
    std::shared_ptr<PeerCallbacks> callbacks;
    size_t fragmentBytes = 0;  // the session's: a reply at most this long is one datagram
  };
  class Sink;
  class Call;
  class Deferred;

  void worker() noexcept;
  // Polls and runs the due handlers until stopped, or until another pool thread takes over
  // while this one runs a handler: pollMu_ is let go either way.
  void poll(MessageBuffer& fixed, Sink& sink) noexcept LRPC_RELEASE(pollMu_);
  void idle() noexcept;  // until this thread may poll again (or stop)
  // Runs the due handlers in a thread that does not poll (pollOnce, runArrived, or a pool
  // thread that another one took polling over from).
  void runJobs(MessageBuffer& fixed) noexcept;
  // The next due job, if any and if fewer than options_.workers handlers run: its handler
  // slot is taken, and afterHandler gives it back.
  bool takeJob(Job& job) noexcept LRPC_EXCLUDES(mu_);
  // After its handler has run (no lock held): gives its handler slot back and finishes the
  // job, unless its answer is to come.
  void afterHandler(const Job& job, Status result, bool deferred) noexcept LRPC_EXCLUDES(mu_);
  void onDatagram(const Datagram& d) noexcept LRPC_REQUIRES(mu_);
  void onHello(const Datagram& d, const Packet& p) noexcept LRPC_REQUIRES(mu_);
  void onRequest(Session& s, const Packet& p) noexcept LRPC_REQUIRES(mu_);
  void onAck(Session& s, const Packet& p) noexcept LRPC_REQUIRES(mu_);
  void schedule(Session& s, Slot& slot) noexcept LRPC_REQUIRES(mu_);
  // Runs a job's handler (no lock held); *deferred: its answer is still to come, and finishes
  // the job itself.
  Status execute(const Job& job, MessageBuffer& fixed, bool* deferred) noexcept;
  // Appends the releases `ids` to the slot's reply if it stays one datagram (true).
  static bool carryReleases(Slot& slot, size_t fragmentBytes, std::span<const uint32_t> ids) noexcept;
  // Opens the channel back to the client of `pc` at the port in `where` (no lock held).
  Status attachCallbacks(PeerCallbacks& pc, std::span<const std::byte> where) noexcept;
  void finishJob(const Job& job, Status result) noexcept LRPC_REQUIRES(mu_);
  // Moves a deferred call's answer into its slot (which the caller owns, or holds mu_ for).
  static Status adoptAnswer(Slot& slot, DeferLink& link) noexcept;
  // Finishes the job of an answered deferred call, unless its slot went to a newer call.
  void finishDeferred(const Job& job, DeferLink& link) noexcept LRPC_REQUIRES(mu_);
  enum class Resend { kNone, kHoles, kMissing };
  void sendReply(Session& s, Slot& slot, Resend resend) noexcept LRPC_REQUIRES(mu_);
  void sendRunning(Session& s, uint32_t seq) noexcept LRPC_REQUIRES(mu_);
  void sendHeaderOnly(NetAddress to, PacketHeader h, std::span<const std::byte> payload) noexcept;
  void eraseSession(std::unordered_map<uint32_t, Session>::iterator it) noexcept LRPC_REQUIRES(mu_);
  bool makeRoomForHalfOpen() noexcept LRPC_REQUIRES(mu_);
  // Ends the sessions silent for sessionTimeout, at most every quarter of it (the poller's).
  void expireSilent() noexcept LRPC_EXCLUDES(mu_);
  void endSilentSessions(int64_t nowNs, int64_t timeoutNs) noexcept LRPC_REQUIRES(mu_);
  void evictOldestEstablished() noexcept LRPC_REQUIRES(mu_);

  ServerOptions options_;
  std::map<std::string, Service, std::less<>> services_;
  std::unique_ptr<Endpoint> endpoint_;
  SecureServerEndpoint* secure_ = nullptr;  // endpoint_ itself, when bind() made it secure
  // For channels back to clients (attachCallbacks): our static key and pre-shared key, and
  // the socket's datagram size before sealing took its share.
  std::optional<secure::KeyPair> selfKey_;
  std::optional<secure::PresharedKey> psk_;
  size_t socketDatagram_ = 0;
  SocketNamespace netns_;  // where bind() made the socket: channels back are made there too
  std::shared_ptr<CapTable> sharedCaps_;
  std::shared_ptr<Life> life_ = std::make_shared<Life>();  // held by deferred replies

  // The pool: whoever holds pollMu_ polls the endpoint. It lets go only to run a handler, and
  // while it runs one longer than takeoverAfter (handlerStarts_ unchanged, inHandler_ set)
  // an idle pool thread takes pollMu_. Neither costs the fast path a system call.
  Mutex pollMu_;
  // Written by pollMu_'s holder; the watcher (idle()) reads them without it.
  WrittenUnder<uint64_t> handlerStarts_;
  WrittenUnder<bool> inHandler_;
  // One idle pool thread watches for a stuck poller; the others sleep until it takes over.
  Mutex idleMu_;
  CondVar idleCv_;
  // Until when (steady_clock ns) a caller reads the socket beside us (readingAside); 0: none.
  std::atomic<int64_t> asideUntil_{0};
  static constexpr std::chrono::milliseconds kAsideLinger{1};
  // Sleeps off the socket while a caller reads it: true if it slept.
  bool sleepWhileReadAside() noexcept;
  bool watcher_ LRPC_GUARDED_BY(idleMu_) = false;

  Mutex mu_;  // the server's state below; never held while a handler runs
  std::unordered_map<uint32_t, Session> sessions_ LRPC_GUARDED_BY(mu_);
  std::unordered_map<uint64_t, uint32_t> byNonce_ LRPC_GUARDED_BY(mu_);  // nonce -> session
  std::deque<uint32_t> halfOpenOrder_ LRPC_GUARDED_BY(mu_);  // oldest first (lazily pruned)
  size_t halfOpen_ LRPC_GUARDED_BY(mu_) = 0;
  std::deque<Job> jobs_ LRPC_GUARDED_BY(mu_);
  uint32_t handlersRunning_ LRPC_GUARDED_BY(mu_) = 0;  // jobs taken and not yet after their handler
  uint32_t nextSession_ LRPC_GUARDED_BY(mu_) = 1;
  uint64_t tick_ LRPC_GUARDED_BY(mu_) = 0;
  std::vector<uint32_t> scratch_ LRPC_GUARDED_BY(mu_);
  FragmentBatch batch_ LRPC_GUARDED_BY(mu_);
  // The last large request's buffer, for the next one (in any slot or session): a client
  // streaming large calls costs no allocation, page faults or zeroing per call, and the
  // server holds at most one such buffer beyond those being reassembled.
  std::unique_ptr<MessageBuffer> spareRequest_ LRPC_GUARDED_BY(mu_);
  // The object tables of sessions just ended, destroyed by Sink after it lets mu_ go.
  std::vector<std::shared_ptr<void>> ended_ LRPC_GUARDED_BY(mu_);
  BufferShelf replyShelf_;                       // its own lock
  ResultShelf resultShelf_;                      // its own lock: storage for lrpc::resultBuffer()
  std::atomic<uint64_t> executed_{0};
  std::atomic<size_t> sessionCount_{0};
  std::atomic<size_t> halfOpenCount_{0};
  std::atomic<bool> stop_{false};
  // When the poller next looks for silent sessions (coarse monotonic ns).
  std::atomic<int64_t> nextExpiryNs_{0};
  std::vector<std::thread> threads_;
};

}  // namespace lrpc::net
