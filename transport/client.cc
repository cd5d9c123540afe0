#include "transport/client.h"

#include <algorithm>
#include <cstring>

#include "runtime/capability.h"
#include "runtime/names.h"
#include "runtime/base/log.h"
#include "transport/callback_host.h"
#include "transport/random.h"
#include "transport/secure/messages.h"
#include "transport/secure_client_endpoint.h"

namespace lrpc::net {

using Clock = std::chrono::steady_clock;

struct UdpChannel::Pending {
  uint32_t seq = 0;
  uint16_t procedure = 0;
  OutMessage request{std::span<const std::byte>()};
  MessageBuffer* reply = nullptr;
  // callApart: a large reply's bytes from tailFrom on go to *tail, and *apart says so.
  std::vector<uint8_t>* tail = nullptr;
  size_t tailFrom = 0;
  bool* apart = nullptr;
  bool done = false;
  Status status;
  bool fragmented = false;   // request needs more than one datagram
  bool requestAcked = false;  // every request fragment acknowledged
  FragmentSender sender;
  Reassembly reassembly;
  uint8_t replyStatus = 0;
  Clock::time_point deadline = Clock::time_point::max();
  Clock::time_point nextRetransmit;
  Clock::duration rto{};
  uint32_t retries = 0;
  bool heard = false;  // new fragments or acks since onTimers last ran: restart the timer there
  // An asynchronous call (startAsync): its slot is let go as soon as it finishes, as no
  // caller's stack waits to do that.
  bool detached = false;
  // Objects of our callback host that the handler dropped (the reply's kFlagReleases):
  // released by the caller, outside every lock, before its call returns.
  uint32_t releaseCount = 0;
  uint32_t releases[kMaxReplyReleases];
};

class UdpChannel::Sink final : public DatagramSink {
 public:
  explicit Sink(UdpChannel& c) : c_(c) {}
  void onDatagram(const Datagram& d) noexcept override {
    MutexLock lock(c_.mu_);
    c_.onDatagram(d);
  }

 private:
  UdpChannel& c_;
};

Result<UdpUri> parseUdpUri(std::string_view uri) {
  constexpr std::string_view kScheme = "udp://";
  constexpr std::string_view kClear = "udp+clear://";
  UdpUri out;
  std::string_view rest;
  if (uri.substr(0, kScheme.size()) == kScheme) {
    rest = uri.substr(kScheme.size());
  } else if (uri.substr(0, kClear.size()) == kClear) {
    rest = uri.substr(kClear.size());
    out.clear = true;
  } else {
    return Status(Errc::kInvalidArgument, "URI must start with udp:// (or udp+clear:// for clear text)");
  }
  size_t slash = rest.find('/');
  // An empty name is left to the name check, which words it as the same host does.
  if (slash == std::string_view::npos) return Status(Errc::kInvalidArgument, "URI needs udp://host:port/name");
  out.hostPort = std::string(rest.substr(0, slash));
  std::string_view name = rest.substr(slash + 1);
  size_t query = name.find('?');
  if (query != std::string_view::npos) {
    std::string_view q = name.substr(query + 1);
    name = name.substr(0, query);
    constexpr std::string_view kKey = "key=";
    if (q.substr(0, kKey.size()) != kKey || q.size() == kKey.size() || q.find('&') != std::string_view::npos) {
      return Status(Errc::kInvalidArgument, "the only query an address takes is ?key=<server public key>");
    }
    out.key = std::string(q.substr(kKey.size()));
  }
  out.name = std::string(name);
  return out;
}

Result<std::shared_ptr<Binding>> connect(std::string_view uri, const InterfaceDescriptor& iface,
                                         const ClientOptions& options) {
  auto parts = parseUdpUri(uri);
  if (!parts) return parts.status();
  if (Status s = validate(options); !s.isOk()) return s;
  if (Status s = lrpc::detail::checkName(parts->name); !s.isOk()) return s;
  auto keys = loadClientKeys(options.security, parts->key, parts->clear);
  if (!keys) return keys.status();
  auto server = parseAddress(parts->hostPort);
  if (!server) return server.status();
  std::unique_ptr<ReverseSetup> reverse;
  try {
    reverse = std::make_unique<ReverseSetup>();
  } catch (const std::bad_alloc&) {
    return Status(Errc::kResourceExhausted, "out of memory for a channel");
  }
  reverse->emulatedEndpoint = options.emulatedEndpoint;
  reverse->maxDatagram = options.maxDatagram;
  reverse->netns = SocketNamespace::current();  // where openBinding makes the channel's socket
  if (keys->initiator) {
    // The callback host accepts only the server's key, and proves ours.
    reverse->self = keys->self;
    reverse->peer = *keys->server;
    reverse->psk = keys->psk;
  }
  return openBinding(*server, parts->name, iface, options, std::move(keys->initiator), std::move(reverse));
}

Result<std::shared_ptr<Binding>> openBinding(NetAddress server, std::string_view name, const InterfaceDescriptor& iface,
                                             const ClientOptions& options, std::optional<secure::Initiator> initiator,
                                             std::unique_ptr<ReverseSetup> reverse) {
  const bool secure = initiator.has_value();
  if (secure && options.maxDatagram < kMinDatagram + secure::data::kOverhead) {
    return Status(Errc::kInvalidArgument, "ClientOptions::maxDatagram must be at least 160 for secure sessions");
  }
  EndpointOptions eo;
  eo.peer = server;
  eo.connect = true;
  eo.maxDatagram = options.maxDatagram;
  eo.spinBeforeBlock = options.spinBeforeBlock;
  eo.receiveBuffers = 64;
  eo.emulated = options.emulatedEndpoint;
  auto ep = openUdpEndpoint(eo);
  if (!ep) return ep.status();
  std::unique_ptr<Endpoint> endpoint = std::move(*ep);
  ClientOptions channelOptions = options;
  if (secure) {
    SecureHandshakeTiming timing;
    timing.timeout = options.connectTimeout;
    timing.initialRto = options.initialRto;
    timing.maxRto = options.maxRto;
    timing.mode = options.mode == ReceiveMode::kBusyPoll ? ReceiveMode::kBusyPoll : ReceiveMode::kBlocking;
    timing.rehandshakeAfter = options.security.rehandshakeAfter;
    auto sec = SecureClientEndpoint::connect(std::move(endpoint), server, std::move(*initiator), timing,
                                             options.security.data);
    if (!sec) return sec.status();
    endpoint = std::move(*sec);
    // The lrpc datagram travels inside a sealed one, 32 bytes larger.
    channelOptions.maxDatagram -= secure::data::kOverhead;
  }
  auto channel = UdpChannel::open(std::move(endpoint), server, name, iface, channelOptions);
  if (!channel) return channel.status();
  if (reverse) (*channel)->enableCallbacks(std::move(reverse));
  CallChannel* raw = channel->get();
  return std::make_shared<Binding>(iface, raw, std::shared_ptr<void>(std::move(*channel)));
}

void UdpChannel::enableCallbacks(std::unique_ptr<ReverseSetup> setup) noexcept { reverse_ = std::move(setup); }

Result<uint32_t> UdpChannel::exportCallback(const Binding& conn, const HostedObject& object) noexcept {
  std::unique_ptr<NetCallbackHost> stale;  // destroyed after the lock is let go (see afterCall)
  MutexLock lock(callbacksMu_);
  if (!reverse_) {
    return Status(Errc::kUnsupported,
                  "this channel was opened without the keys to be called back (lrpc::net::connect gives them)");
  }
  uint32_t session;
  {
    MutexLock inner(mu_);
    session = session_;
  }
  // A new session (the server lost the old one: it restarted) knows nothing of our host, and
  // the objects the old one held are referenced by nobody now: a new host, told to the server.
  if (callbackHost_ && attachedSession_ != session) stale = std::move(callbackHost_);
  if (!callbackHost_) {
    Result<std::unique_ptr<NetCallbackHost>> host = NetCallbackHost::start(*reverse_, endpoint_->localAddress());
    if (!host.isOk()) return host.status();
    const uint16_t port = (*host)->port();
    const std::byte where[2] = {std::byte(port & 0xFF), std::byte(port >> 8)};
    CallOptions options;
    options.timeout = options_.connectTimeout + std::chrono::seconds(1);  // the server shakes hands with the host
    if (Status s = lrpc::detail::attachCallbacks(conn, where, options); !s.isOk()) return s;
    callbackHost_ = std::move(*host);
    attachedSession_ = session;
  }
  Result<uint32_t> id = callbackHost_->table().add(object);
  if (!id.isOk()) return id.status();
  return *id | kClientHostedCap;
}

Result<HostedObject> UdpChannel::findCallback(uint32_t id, uint64_t ifaceId) const noexcept {
  MutexLock lock(callbacksMu_);
  if (!callbackHost_) return Status(Errc::kBadFrame, "the server passed a callback id, but this client passed none");
  return callbackHost_->table().find(id, ifaceId);
}

Status validate(const ClientOptions& o) {
  auto bad = [](const char* what) { return Status(Errc::kInvalidArgument, std::string("ClientOptions::") + what); };
  if (o.window == 0 || o.window > 1024) return bad("window must be 1..1024");
  if (o.initialRto.count() <= 0) return bad("initialRto must be positive");
  if (o.maxRto < o.initialRto) return bad("maxRto must be at least initialRto");
  if (o.connectTimeout.count() <= 0) return bad("connectTimeout must be positive");
  if (o.spinBeforeBlock.count() < 0) return bad("spinBeforeBlock must not be negative");
  if (o.maxDatagram < kMinDatagram || o.maxDatagram > kMaxDatagramLimit) return bad("maxDatagram must be 128..65507");
  if (o.maxMessageBytes == 0 || o.maxMessageBytes > UINT32_MAX) return bad("maxMessageBytes must be 1..2^32-1");
  if (o.fragmentWindow == 0 || o.fragmentWindow > kAckBits) return bad("fragmentWindow must be 1..2048");
  return {};
}

UdpChannel::UdpChannel(std::unique_ptr<Endpoint> endpoint, NetAddress server, const ClientOptions& options)
    : endpoint_(std::move(endpoint)),
      server_(server),
      options_(options),
      nextSeq_(options.firstSequence),
      shelf_(options.keepBufferBytes) {}

UdpChannel::~UdpChannel() {
  // Tell the server it may drop the session now rather than when it ages out. Best effort.
  PacketHeader h = makeHeader(PacketType::kBye, session_, cookie_, 0);
  OutDatagram d{server_, {{&h, sizeof h}}, 1};
  if (session_ != 0) (void)endpoint_->send({&d, 1});
}

Result<std::shared_ptr<UdpChannel>> UdpChannel::open(std::unique_ptr<Endpoint> endpoint, NetAddress server,
                                                     std::string_view name, const InterfaceDescriptor& iface,
                                                     const ClientOptions& options) {
  if (Status s = validate(options); !s.isOk()) return s;
  // The same rules and words as the same-host path, checked before anything is sent.
  if (Status s = lrpc::detail::checkName(name); !s.isOk()) return s;
  if (endpoint == nullptr) return Status(Errc::kInvalidArgument, "no endpoint");
  std::shared_ptr<UdpChannel> c(new UdpChannel(std::move(endpoint), server, options));
  c->name_ = std::string(name);
  c->iface_ = &iface;
  {
    MutexLock lock(c->mu_);  // nobody shares the channel yet: taken for handshake()'s contract
    if (Status s = c->handshake(name, iface); !s.isOk()) return s;
  }
  lrpc::detail::logf(LogTopic::kTransport, "udp channel to %s/%.*s: session %u over the %s endpoint", server.toString().c_str(),
               static_cast<int>(name.size()), name.data(), c->session_, c->endpoint_->kind());
  return c;
}

Status UdpChannel::handshake(std::string_view name, const InterfaceDescriptor& iface) {
  uint64_t nonce = detail::randomCookie();
  HelloBody body{};
  body.ifaceId = iface.id;
  body.signatureHash = iface.signatureHash;
  body.window = options_.window;
  body.maxDatagram = static_cast<uint32_t>(options_.maxDatagram);
  std::string payload;
  if (Status s = encodeHello(body, name, iface.name ? iface.name : "", payload); !s.isOk()) return s;
  PacketHeader h = makeHeader(PacketType::kHello, 0, nonce, 0);
  h.total = static_cast<uint32_t>(payload.size());
  OutDatagram d{server_, {{&h, sizeof h}, {payload.data(), payload.size()}}, 2};

  struct HelloSink final : DatagramSink {
    uint64_t nonce;
    NetAddress server;
    bool got = false;
    Status status;
    PacketHeader header{};
    WelcomeBody welcome{};
    void onDatagram(const Datagram& dg) noexcept override {
      if (got || !(dg.from == server)) return;
      auto p = decodePacket(dg.bytes);
      if (!p || p->type() != PacketType::kWelcome || p->header.cookie != nonce) return;
      got = true;
      header = p->header;
      if (p->header.status != 0) {
        status = Status(errcFromWire(p->header.status),
                        std::string(reinterpret_cast<const char*>(p->payload.data()), p->payload.size()));
        return;
      }
      auto w = decodeWelcome(p->payload);
      if (!w) {
        status = w.status();
        return;
      }
      welcome = *w;
    }
  } sink;
  sink.nonce = nonce;
  sink.server = server_;

  auto deadline = Clock::now() + options_.connectTimeout;
  auto rto = std::chrono::duration_cast<Clock::duration>(options_.initialRto);
  // A busy-polling channel waits for the welcome the way it will wait for replies, so the
  // endpoint keeps its busy-poll path (a wait that sleeps would arm the io_uring receive).
  const ReceiveMode waitMode = options_.mode == ReceiveMode::kBusyPoll ? ReceiveMode::kBusyPoll : ReceiveMode::kBlocking;
  while (!sink.got) {
    auto now = Clock::now();
    if (now >= deadline) {
      return Status(Errc::kPeerDied, "no answer from " + server_.toString() + " to the session handshake");
    }
    if (Status s = endpoint_->send({&d, 1}); !s.isOk() && s.code() != Errc::kPeerDied) return s;
    auto until = std::min(deadline, now + rto);
    while (!sink.got && Clock::now() < until) {
      auto got = endpoint_->receive(sink, waitMode, until - Clock::now());
      if (!got && got.status().code() != Errc::kPeerDied) return got.status();
      if (!got) break;  // nobody on that port (yet): retry after the timeout
    }
    rto = std::min<Clock::duration>(rto * 2, options_.maxRto);
  }
  if (!sink.status.isOk()) return sink.status;
  if (sink.welcome.cookie == 0 || sink.header.session == 0 || sink.welcome.window == 0 ||
      sink.welcome.window > options_.window || sink.welcome.maxDatagram < kMinDatagram) {
    return Status(Errc::kBadFrame, "malformed welcome");
  }
  if (sink.welcome.procedureCount != iface.procedureCount) {
    return Status(Errc::kBindingRejected, "server's procedure count differs");
  }
  session_ = sink.header.session;
  cookie_ = sink.welcome.cookie;
  window_ = sink.welcome.window;
  fragmentBytes_ = fragmentPayload(std::min<size_t>(options_.maxDatagram, sink.welcome.maxDatagram));
  slots_.assign(window_, nullptr);
  nextSeq_ = options_.firstSequence;
  owed_.clear();  // the numbers start over: a given-up call of the old session is not a new one's
  ++stats_.sessions;
  return {};
}

Status UdpChannel::rehandshake() {
  // Nobody polls meanwhile (pollMu_ before mu_, as lead() takes them). Callers that come
  // now wait on mu_: their calls go out on the new session.
  mu_.unlock();
  MutexLock poll(pollMu_);
  mu_.lock();
  if (!lost_ || !dead_.isOk()) return dead_;  // another caller got here first
  lost_ = false;
  Status s = handshake(name_, *iface_);
  if (!s.isOk()) {
    dead_ = Status(s.code(), "session lost and a new one refused: " + s.detail());
    return dead_;
  }
  lrpc::detail::logf(LogTopic::kTransport, "udp channel to %s/%s: new session %u", server_.toString().c_str(), name_.c_str(), session_);
  return {};
}

UdpChannel::Stats UdpChannel::stats() const {
  MutexLock lock(mu_);
  return stats_;
}

Status UdpChannel::call(const InterfaceDescriptor& iface, uint32_t procedure, const OutMessage& request,
                        MessageBuffer& reply, const CallOptions& options) noexcept {
  (void)iface;
  Pending p;
  p.reply = &reply;
  return afterCall(p, run(procedure, p, request, options));
}

Status UdpChannel::callApart(const InterfaceDescriptor& iface, uint32_t procedure, const OutMessage& request,
                             MessageBuffer& reply, size_t fixedBytes, std::vector<uint8_t>& tail, bool* apart,
                             const CallOptions& options) noexcept {
  (void)iface;
  *apart = false;
  Pending p;
  p.reply = &reply;
  p.tail = &tail;
  p.tailFrom = fixedBytes;
  p.apart = apart;
  return afterCall(p, run(procedure, p, request, options));
}

void UdpChannel::releaseHosted(std::span<const uint32_t> ids) noexcept {
  if (ids.empty()) return;
  std::shared_ptr<CapTable> table;
  {
    MutexLock lock(callbacksMu_);
    if (!callbackHost_) return;  // the host has gone, and its objects with it
    table = callbackHost_->sharedTable();
  }
  // An id that names no live object is a confused server's: ignored, as the host ignores such
  // a release sent on its own.
  for (uint32_t id : ids) (void)table->release(id);
}

Status UdpChannel::afterCall(Pending& p, Status s) noexcept {
  releaseHosted({p.releases, p.releaseCount});
  if (s.code() != Errc::kPeerDied) return s;
  {
    MutexLock lock(mu_);
    if (dead_.isOk()) return s;
  }
  // The server is gone, and with it every reference to the objects we passed it.
  std::unique_ptr<NetCallbackHost> host;
  {
    MutexLock lock(callbacksMu_);
    host = std::move(callbackHost_);
  }
  return s;  // `host` goes here, outside both locks: an object's destructor may call us
}

Status UdpChannel::run(uint32_t procedure, Pending& p, const OutMessage& request, const CallOptions& options) noexcept {
  if (Status s = begin(procedure, p, request, options); !s.isOk()) return s;
  // Wait for the reply: poll the endpoint ourselves when nobody else does.
  MutexLock lock(mu_);
  if (!held_.empty()) sendHeldLocked();  // this thread's asynchronous calls go before we wait
  while (!p.done) {
    if (!leadIfFree(p, std::chrono::milliseconds(20))) cv_.waitFor(mu_, std::chrono::milliseconds(5));
  }
  slots_[p.seq % window_] = nullptr;
  --occupied_;
  cv_.notifyAll();
  return std::move(p.status);
}

Status UdpChannel::begin(uint32_t procedure, Pending& p, const OutMessage& request, const CallOptions& options) noexcept {
  if (procedure > UINT16_MAX) return Status(Errc::kInvalidArgument, "procedure index too large");
  if (request.size() > UINT32_MAX) return Status(Errc::kInvalidArgument, "request larger than 4 GiB");
  p.procedure = static_cast<uint16_t>(procedure);
  p.request = request;
  const auto timeout = std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(options.timeout.count()));
  {
    MutexLock lock(mu_);
    // The window: seq s may go out only when s - window has finished, so its slot is free.
    // Callers beyond the window wait here (U-Net AM holds the sender back the same way).
    // A lost session is replaced once the calls that were on it have all returned.
    for (;;) {
      if (!dead_.isOk()) return dead_;
      if (lost_ && occupied_ == 0) {
        if (Status s = rehandshake(); !s.isOk()) return s;
        continue;
      }
      if (!lost_ && slots_[nextSeq_ % window_] == nullptr) break;
      if (!held_.empty()) sendHeldLocked();  // the window is full: what it holds goes now
      if (timeout.count() > 0 && p.deadline == Clock::time_point::max()) p.deadline = Clock::now() + timeout;
      // Polls when nobody does: the calls holding the window may all be this thread's
      // asynchronous ones, which complete only when someone polls.
      if (!leadIfFree(p, std::chrono::milliseconds(5))) cv_.waitFor(mu_, std::chrono::milliseconds(50));
      if (Clock::now() >= p.deadline) {
        return Status(Errc::kDeadlineExceeded, "call window full until the deadline");
      }
    }
    // Wraps modulo 2^32 (the server compares sequence numbers the same way).
    p.seq = nextSeq_++;
    slots_[p.seq % window_] = &p;
    ++live_;
    ++occupied_;
    ++stats_.calls;
    // A request that borrows (RemoteCall::kBorrowBytes or more) never fits one datagram.
    p.fragmented = request.size() > fragmentBytes_ || request.borrows();
    if (p.fragmented) p.sender.reset(request, fragmentBytes_, options_.fragmentWindow);
    p.rto = std::chrono::duration_cast<Clock::duration>(options_.initialRto);
    // The clock is read once the request is out, not before: the timers run only under mu_,
    // which we hold, and a small call then reaches the wire one clock read sooner. A deadline
    // starts counting there (unless the window was full: then when the call began to wait).
    // An asynchronous call's request waits for the thread's SendBatch, if it has one, to leave
    // with the others in one system call.
    if (!(p.detached && !p.fragmented && holdForBatch(p))) sendRequest(p, false);
    auto now = Clock::now();
    if (timeout.count() > 0 && p.deadline == Clock::time_point::max()) p.deadline = now + timeout;
    p.nextRetransmit = now + p.rto;
  }
  return {};
}

// An asynchronous call: its Pending lives here instead of on a caller's stack.
class UdpChannel::Started final : public ChannelCall {
 public:
  explicit Started(UdpChannel& channel) noexcept : channel_(channel) {}
  ~Started() override { cancel(); }
  std::optional<Status> await(int64_t untilNs) noexcept override {
    if (over_) return std::nullopt;
    std::optional<Status> s = channel_.progress(p, untilNs);
    over_ = s.has_value();
    return s;
  }
  void cancel() noexcept override {
    if (over_) return;
    over_ = true;
    channel_.abandon(p);
    // A reply another caller read meanwhile may have brought releases; abandon() took the lock
    // they were written under.
    channel_.releaseHosted({p.releases, p.releaseCount});
  }

  Pending p;

 private:
  UdpChannel& channel_;
  bool over_ = false;  // finished and its slot let go
};

Result<std::unique_ptr<ChannelCall>> UdpChannel::startAsync(const InterfaceDescriptor& iface, uint32_t procedure,
                                                            const OutMessage& request, MessageBuffer& reply,
                                                            const CallOptions& options, lrpc::detail::Reclaim reclaim) noexcept {
  (void)iface;
  (void)reclaim;  // no A-stacks: a full window is waited for by polling (begin)
  std::unique_ptr<Started> started(new (std::nothrow) Started(*this));
  if (!started) return Status(Errc::kResourceExhausted, "out of memory for an asynchronous call");
  started->p.reply = &reply;
  started->p.detached = true;
  if (Status s = begin(procedure, started->p, request, options); !s.isOk()) {
    started->cancel();  // never in a slot: nothing to let go
    return s;
  }
  return std::unique_ptr<ChannelCall>(std::move(started));
}

std::optional<Status> UdpChannel::progress(Pending& p, int64_t untilNs) noexcept {
  MutexLock lock(mu_);
  if (!held_.empty()) sendHeldLocked();  // a caller never waits for a request still held
  for (bool looked = false;;) {
    if (p.done) {  // its slot went when it finished
      Status s = std::move(p.status);
      lock.unlock();
      releaseHosted({p.releases, p.releaseCount});
      return s;
    }
    if (looked) return std::nullopt;
    // untilNs is CLOCK_MONOTONIC (lrpc's monotonicNs), which steady_clock reads on Linux.
    const auto now = Clock::now();
    const int64_t nowNs = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
    looked = untilNs == 0 || nowNs >= untilNs;  // one more look, then give back
    const auto left = std::chrono::nanoseconds(looked ? 0 : untilNs - nowNs);
    if (!leadIfFree(p, left) && !looked) {
      cv_.waitFor(mu_, std::min<std::chrono::nanoseconds>(left, std::chrono::milliseconds(5)));
    }
  }
}

void UdpChannel::abandon(Pending& p) noexcept {
  MutexLock lock(mu_);
  if (p.done || slots_[p.seq % window_] != &p) return;  // finished, or never sent
  // A reply that still comes finds no call with its sequence number: dropped (and, if it is
  // a fragmented one, told to stop).
  finish(p, Status(Errc::kCancelled, "the caller cancelled the call"));
  sendCancel(p.seq);
  owe(p.seq);
}

void UdpChannel::owe(uint32_t seq) noexcept {
  // A handler may have dropped our objects before the cancel reached it: their releases then
  // come on a reply that no caller waits for. A few such calls are remembered.
  if (owed_.size() == kOwedCalls) owed_.erase(owed_.begin());
  try {
    owed_.push_back(seq);
  } catch (const std::bad_alloc&) {
    // Not remembered: its releases, if its reply brings any, wait for the session's end.
  }
}

void UdpChannel::sendCancel(uint32_t seq) noexcept {
  // Once, not retransmitted: only a hint for the handler (callCancelled()).
  PacketHeader h = makeHeader(PacketType::kCancel, session_, cookie_, seq);
  OutDatagram d{server_, {{&h, sizeof h}}, 1};
  (void)endpoint_->send({&d, 1});
}

bool UdpChannel::leadIfFree(Pending& self, std::chrono::nanoseconds maxWait) {
  if (!pollMu_.tryLock()) return false;
  mu_.unlock();
  std::vector<uint32_t> owed;
  lead(self, maxWait, owed);
  pollMu_.unlock();
  releaseHosted(owed);  // no lock held: an object's destructor may call us
  mu_.lock();
  // Leadership is free: wake a waiting caller so that someone keeps polling.
  cv_.notifyAll();
  return true;
}

void UdpChannel::lead(Pending& self, std::chrono::nanoseconds maxWait, std::vector<uint32_t>& owed) {
  Sink sink(*this);
  Clock::time_point wake;
  {
    MutexLock lock(mu_);
    if (self.done) return;
    wake = self.deadline;
    for (Pending* q : slots_) {
      if (q != nullptr && !q->done) wake = std::min({wake, q->nextRetransmit, q->deadline});
    }
  }
  auto now = Clock::now();
  // Bounded so that calls started by other threads meanwhile get their timers run.
  auto timeout = std::clamp<Clock::duration>(wake - now, Clock::duration::zero(),
                                             std::chrono::duration_cast<Clock::duration>(maxWait));
  auto got = endpoint_->receive(sink, options_.mode, timeout);
  MutexLock lock(mu_);
  if (!got) {
    if (got.status().code() == Errc::kPeerDied) {
      die(Status(Errc::kPeerDied, "server " + server_.toString() + " unreachable (port closed)"));
    } else {
      failAll(got.status());
    }
    return;
  }
  // With every call finished (the common case: ours just was), there is no timer to run and
  // no clock to read on the way back to the caller.
  if (live_ > 0) onTimers(Clock::now());
  if (!releasesOwed_.empty()) owed.swap(releasesOwed_);
}

void UdpChannel::lend(MessageBuffer& buffer, size_t bytes) noexcept { shelf_.lend(buffer, bytes); }

void UdpChannel::recycle(MessageBuffer& buffer) noexcept { shelf_.put(buffer); }

void UdpChannel::finish(Pending& p, Status s) noexcept {
  if (p.done) return;
  p.done = true;
  --live_;
  p.status = std::move(s);
  p.reassembly.clear();
  if (p.detached) {
    slots_[p.seq % window_] = nullptr;
    --occupied_;
  }
  cv_.notifyAll();
}

void UdpChannel::failAll(const Status& s) noexcept {
  for (Pending* q : slots_) {
    if (q != nullptr) finish(*q, s);
  }
}

void UdpChannel::die(Status s) noexcept {
  // Later calls fail at once with the same words, instead of each waiting out its retries.
  if (dead_.isOk()) dead_ = std::move(s);
  failAll(dead_);
}

PacketHeader UdpChannel::requestHeader(const Pending& p) const noexcept {
  PacketHeader h = makeHeader(PacketType::kRequest, session_, cookie_, p.seq);
  h.procedure = p.procedure;
  h.total = static_cast<uint32_t>(p.request.size());
  if (!p.fragmented && kHeaderBytes + p.request.size() <= kCellBytes) h.flags |= kFlagSingleCell;
  return h;
}

bool UdpChannel::holdForBatch(const Pending& p) noexcept {
  SendBatch* batch = SendBatch::current();
  if (batch == nullptr) return false;
  std::weak_ptr<UdpChannel> self = weak_from_this();
  if (self.expired() || !batch->hold(std::move(self))) return false;
  try {
    held_.push_back(p.seq);
  } catch (const std::bad_alloc&) {
    return false;
  }
  return true;
}

void UdpChannel::sendHeld() noexcept {
  MutexLock lock(mu_);
  sendHeldLocked();
}

void UdpChannel::sendHeldLocked() noexcept {
  constexpr size_t kChunk = 32;  // datagrams per endpoint send
  PacketHeader headers[kChunk];
  OutDatagram out[kChunk];
  size_t n = 0;
  auto send = [&]() LRPC_REQUIRES(mu_) {
    if (n == 0) return;
    ++stats_.requestSends;
    Status s = endpoint_->send({out, n});
    if (s.code() == Errc::kPeerDied) die(Status(Errc::kPeerDied, "server " + server_.toString() + " unreachable"));
    n = 0;
  };
  for (uint32_t seq : held_) {
    Pending* q = slots_[seq % window_];
    if (q == nullptr || q->seq != seq || q->done) continue;  // cancelled, failed or answered meanwhile
    headers[n] = requestHeader(*q);
    std::span<const std::byte> body = q->request.plain();  // single-datagram requests only (begin)
    out[n] = OutDatagram{server_, {{&headers[n], sizeof headers[n]}, {const_cast<std::byte*>(body.data()), body.size()}}, 2};
    if (++n == kChunk) send();
  }
  send();
  held_.clear();
}

void UdpChannel::sendRequest(Pending& p, bool resend) noexcept {
  PacketHeader h = requestHeader(p);
  if (!resend) ++stats_.requestSends;
  if (!p.fragmented) {
    std::span<const std::byte> body = p.request.plain();  // it borrows nothing (call())
    OutDatagram d{server_, {{&h, sizeof h}, {const_cast<std::byte*>(body.data()), body.size()}}, 2};
    Status s = endpoint_->send({&d, 1});
    if (s.code() == Errc::kPeerDied) die(Status(Errc::kPeerDied, "server " + server_.toString() + " unreachable"));
    return;
  }
  h.flags |= kFlagFragment;
  scratch_.clear();
  if (resend) p.sender.takeMissing(scratch_);
  p.sender.takeNew(scratch_);
  (void)batch_.send(*endpoint_, server_, h, scratch_, p.sender);
}

void UdpChannel::sendAck(uint32_t seq, const AckBody& ack, bool resend) noexcept {
  PacketHeader h = makeHeader(PacketType::kAck, session_, cookie_, seq);
  h.flags = kFlagAckOfReply | (resend ? kFlagResend : 0);
  h.total = sizeof ack;
  OutDatagram d{server_, {{&h, sizeof h}, {const_cast<AckBody*>(&ack), sizeof ack}}, 2};
  (void)endpoint_->send({&d, 1});
}

void UdpChannel::onTimers(Clock::time_point now) noexcept {
  for (Pending* q : slots_) {
    if (q == nullptr || q->done) continue;
    Pending& p = *q;
    if (now >= p.deadline) {
      finish(p, Status(Errc::kDeadlineExceeded, "no reply before the call's deadline"));
      sendCancel(p.seq);
      owe(p.seq);
      continue;
    }
    if (p.heard) {
      // The peer is alive and the message moving: the timer restarts from its first timeout.
      // Set here, once per poll, rather than per datagram: a clock read for each of the ~700
      // fragments of a 1 MiB reply was 8% of the client's time.
      p.heard = false;
      p.retries = 0;
      p.rto = std::chrono::duration_cast<Clock::duration>(options_.initialRto);
      p.nextRetransmit = now + p.rto;
      continue;
    }
    if (now < p.nextRetransmit) continue;
    if (++p.retries > options_.maxRetries) {
      // A silent server: this channel's other calls and all later ones fail too.
      die(Status(Errc::kPeerDied, "no answer from " + server_.toString() + " after " +
                                      std::to_string(options_.maxRetries) + " retransmissions"));
      return;
    }
    ++stats_.retransmits;
    p.rto = std::min<Clock::duration>(p.rto * 2, options_.maxRto);
    p.nextRetransmit = now + p.rto;
    if (!p.fragmented || !p.requestAcked) {
      sendRequest(p, true);
    } else {
      // The server has the whole request: ask for what is missing of the reply.
      AckBody ack{};
      if (p.reassembly.active()) ack = p.reassembly.ack();
      sendAck(p.seq, ack, true);
    }
  }
}

void UdpChannel::onDatagram(const Datagram& d) noexcept {
  auto decoded = decodePacket(d.bytes);
  if (!decoded || !(d.from == server_)) {
    ++stats_.dropped;
    return;
  }
  const Packet& pk = *decoded;
  const PacketHeader& h = pk.header;
  // Stale (an earlier session) or spoofed packets carry the wrong cookie: dropped.
  if (h.session != session_ || h.cookie != cookie_) {
    ++stats_.dropped;
    return;
  }
  if (pk.type() == PacketType::kReset) {
    // The server does not know the session (restarted, or evicted it). The calls on it may
    // have run there before: they fail. Calls made from now on go out on a new session.
    if (!lost_) {
      lost_ = true;
      failAll(Status(Errc::kPeerDied, "server " + server_.toString() +
                                          " lost the session (restarted?); the call may have run"));
    }
    return;
  }
  Pending* q = slots_[h.seq % window_];
  Pending* p = (q != nullptr && q->seq == h.seq && !q->done) ? q : nullptr;
  if (pk.type() == PacketType::kRunning) {
    // The whole request is there and its handler runs: the server is alive. The retry count
    // starts over, the backoff goes on, so a long call is asked after about every maxRto.
    ++stats_.running;
    if (p != nullptr) {
      p->requestAcked = true;
      p->retries = 0;
    }
    return;
  }
  if (pk.type() == PacketType::kAck && (h.flags & kFlagAckOfReply) == 0) {
    if (p == nullptr || !p->fragmented) {
      ++stats_.dropped;
      return;
    }
    auto ack = decodeAck(pk.payload);
    if (!ack) return;
    if (p->sender.onAck(*ack)) p->heard = true;
    if (p->sender.complete() || ack->complete) p->requestAcked = true;
    if (!p->requestAcked) {
      // New fragments the window now admits, plus holes the ack reveals.
      PacketHeader rh = makeHeader(PacketType::kRequest, session_, cookie_, p->seq);
      rh.procedure = p->procedure;
      rh.total = static_cast<uint32_t>(p->request.size());
      rh.flags = kFlagFragment;
      scratch_.clear();
      p->sender.takeHoles(scratch_);
      p->sender.takeNew(scratch_);
      (void)batch_.send(*endpoint_, server_, rh, scratch_, p->sender);
    }
    return;
  }
  if (pk.type() != PacketType::kReply) {
    ++stats_.dropped;
    return;
  }
  if (p == nullptr) {
    if ((h.flags & kFlagReleases) != 0) collectOwed(h.seq, pk.payload);
    // A reply for a call that already finished (a duplicate, or fragments still in flight
    // after completion): tell the server to stop sending it.
    if ((h.flags & kFlagFragment) != 0) {
      AckBody done{};
      done.complete = 1;
      sendAck(h.seq, done);
    }
    ++stats_.dropped;
    return;
  }
  if (h.procedure != p->procedure) {
    ++stats_.dropped;
    return;
  }
  p->requestAcked = true;  // a reply implies the whole request arrived
  if ((h.flags & kFlagFragment) == 0) {
    if (h.status != 0) {
      finish(*p, Status(errcFromWire(h.status),
                        std::string(reinterpret_cast<const char*>(pk.payload.data()), pk.payload.size())));
      return;
    }
    std::span<const std::byte> results = pk.payload;
    if ((h.flags & kFlagReleases) != 0) {
      auto split = splitReleases(pk.payload, p->releases, &p->releaseCount);
      if (!split) {
        finish(*p, split.status());
        return;
      }
      results = *split;
      stats_.releasesCarried += p->releaseCount;
    }
    if (Status s = p->reply->resize(results.size()); !s.isOk()) {
      finish(*p, std::move(s));
      return;
    }
    if (!results.empty()) std::memcpy(p->reply->data(), results.data(), results.size());
    finish(*p, Status());
    return;
  }
  // A fragment of a large reply: reassembled in place, in the caller's reply buffer.
  if (!p->reassembly.active()) {
    if (h.total > options_.maxMessageBytes) {
      finish(*p, Status(Errc::kResourceExhausted, "reply larger than maxMessageBytes"));
      return;
    }
    std::span<std::byte> apart;
    if (p->tail != nullptr && h.status == 0 && h.total >= p->tailFrom + kApartBytes) {
      // The tail is the caller's Data value (callApart): reassembled straight into the vector
      // that becomes it, instead of here and then copied (a pass over a megabyte reply).
      try {
        // The caller's own vector (lrpc::Into) may hold a value already: its size kept costs
        // nothing, its old bytes are never worth copying into a larger allocation.
        if (p->tail->capacity() < h.total - p->tailFrom) p->tail->clear();
        p->tail->resize(h.total - p->tailFrom);
      } catch (...) {
        finish(*p, Status(Errc::kResourceExhausted, "reply tail allocation failed"));
        return;
      }
      apart = std::as_writable_bytes(std::span<uint8_t>(*p->tail));
      *p->apart = true;
    } else if (h.total > p->reply->capacity()) {
      lend(*p->reply, h.total);  // a kept buffer, if large enough
    }
    if (Status s = p->reassembly.begin(h.total, fragmentBytes_, *p->reply, ackEvery(options_.fragmentWindow), apart);
        !s.isOk()) {
      finish(*p, std::move(s));
      return;
    }
    p->replyStatus = h.status;
  }
  auto acc = p->reassembly.accept(h, pk.payload);
  if (!acc) {
    ++stats_.dropped;
    return;
  }
  if (*acc == Reassembly::Accept::kNew) p->heard = true;
  if (p->reassembly.complete()) {
    AckBody ack = p->reassembly.ack();
    sendAck(p->seq, ack);
    if (p->replyStatus != 0) {
      finish(*p, Status(errcFromWire(p->replyStatus),
                        std::string(reinterpret_cast<const char*>(p->reply->data()), p->reply->size())));
    } else {
      finish(*p, Status());
    }
    return;
  }
  if (p->reassembly.ackDue()) {
    sendAck(p->seq, p->reassembly.ack());
    p->reassembly.acked();
  }
}

void UdpChannel::collectOwed(uint32_t seq, std::span<const std::byte> payload) noexcept {
  auto it = std::find(owed_.begin(), owed_.end(), seq);
  if (it == owed_.end()) return;  // a duplicate of a reply already read: its releases were made
  owed_.erase(it);
  uint32_t ids[kMaxReplyReleases];
  uint32_t count = 0;
  if (!splitReleases(payload, ids, &count)) return;
  stats_.releasesCarried += count;
  try {
    releasesOwed_.insert(releasesOwed_.end(), ids, ids + count);
  } catch (const std::bad_alloc&) {
    // Left to the session's end, when the host drops every object.
  }
}

}  // namespace lrpc::net
