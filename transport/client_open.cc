// Opening a UDP channel: the address, the session (handshake, and again after the server lost
// it), and the objects this client serves to the server (callbacks).
#include "transport/client.h"

#include <algorithm>
#include <cstring>

#include "runtime/callbacks.h"
#include "runtime/capability.h"
#include "runtime/names.h"
#include "runtime/base/log.h"
#include "runtime/transfer.h"
#include "transport/callback_host.h"
#include "transport/client_parts.h"
#include "transport/random.h"
#include "transport/secure/messages.h"
#include "transport/secure_client_endpoint.h"

namespace lrpc::net {

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
  keepAlive();  // the server's hold on the object lives as long as the session
  std::shared_ptr<NetCallbackHost> stale;  // destroyed after the lock is let go (see afterCall)
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
  if (callbackHost_ && attachedSession_ != session) {
    stale = std::move(callbackHost_);
    setAsideHost(nullptr);
  }
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
    setAsideHost(callbackHost_);
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
  std::thread keeper;
  {
    MutexLock lock(keeperMu_);
    keeperStop_ = true;
    keeper.swap(keeper_);
  }
  keeperCv_.notifyAll();
  if (keeper.joinable()) keeper.join();
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
  c->capsOutliveSessions_ = &iface == &lrpc::detail::kCallbackInterface;
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
        status = Status(errcFromWire(p->header.status), lrpc::detail::wireDetail(p->payload.data(), p->payload.size()));
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
  idleTimeoutNs_ = int64_t{sink.welcome.idleTimeoutMs} * 1'000'000;
  sentNs_.store(lrpc::detail::coarseMonotonicNs(), std::memory_order_relaxed);  // the hello counts
  ++stats_.sessions;
  return {};
}

void UdpChannel::loseSession() noexcept {
  lost_ = true;
  // Relaxed: calls on capabilities read it without mu_ before they reach the channel, and
  // begin() reads it again under mu_ for them (ExpectSession, runtime/capability.h).
  sessionsEnded_.fetch_add(1, std::memory_order_relaxed);
}

bool UdpChannel::silentTooLong(int64_t nowNs) const noexcept {
  // A quarter of the timeout to spare: the server's coarse clock, and a request on its way.
  return idleTimeoutNs_ > 0 && nowNs - sentNs_.load(std::memory_order_relaxed) > idleTimeoutNs_ / 4 * 3;
}

void UdpChannel::keepAlive() noexcept {
  if (keeping_.load(std::memory_order_relaxed)) return;
  MutexLock lock(keeperMu_);
  if (keeping_.load(std::memory_order_relaxed) || keeperStop_) return;
  try {
    keeper_ = std::thread([this] { keep(); });
    keeping_.store(true, std::memory_order_relaxed);
  } catch (const std::system_error& e) {
    // Then the session lives while calls keep it busy, and its objects may go with it.
    lrpc::detail::logf(LogTopic::kTransport, "udp channel to %s: no keepalive thread: %s", server_.toString().c_str(), e.what());
  }
}

void UdpChannel::keep() noexcept {
  for (;;) {
    int64_t interval;
    {
      MutexLock lock(mu_);
      interval = idleTimeoutNs_ / 3;
    }
    // Until a third of the timeout after the last send, so that the silence the server sees
    // stays near a third of it: a late wake-up then still leaves most of the rest to spare.
    // A server that never ends sessions (0) may be replaced by one that does: look again.
    int64_t wait = 1'000'000'000;
    if (interval > 0) {
      wait = sentNs_.load(std::memory_order_relaxed) + interval - lrpc::detail::coarseMonotonicNs();
      wait = std::max<int64_t>(wait, 1'000'000);
    }
    {
      MutexLock lock(keeperMu_);
      if (keeperStop_) return;
      keeperCv_.waitFor(keeperMu_, std::chrono::nanoseconds(wait));
      if (keeperStop_) return;
    }
    const int64_t now = lrpc::detail::coarseMonotonicNs();
    if (interval == 0 || now - sentNs_.load(std::memory_order_relaxed) < interval) continue;  // calls kept it alive
    MutexLock lock(mu_);
    // A lost or dead session has nothing to keep: the next call opens a new one, or fails.
    if (!dead_.isOk() || lost_ || session_ == 0) continue;
    PacketHeader h = makeHeader(PacketType::kAck, session_, cookie_, 0);  // no flags: a keepalive
    OutDatagram d{server_, {{&h, sizeof h}}, 1};
    (void)endpoint_->send({&d, 1});
    sentNs_.store(now, std::memory_order_relaxed);
    ++stats_.keepalives;
  }
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

}  // namespace lrpc::net
