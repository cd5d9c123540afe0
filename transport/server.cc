// A UDP server's frame: its options, names, socket and threads (the worker pool and the one
// thread at a time that polls the socket); what arrives is handled in server_receive.cc.
#include "transport/server.h"

#include <algorithm>
#include <cstring>

#include "runtime/cap_table.h"
#include "runtime/callbacks.h"
#include "runtime/names.h"
#include "runtime/base/log.h"
#include "transport/callback_host.h"
#include "transport/random.h"
#include "transport/secure/messages.h"
#include "transport/secure_server_endpoint.h"

namespace lrpc::net {

class UdpServer::Sink final : public DatagramSink {
 public:
  explicit Sink(UdpServer& s) : s_(s) {}
  void onDatagram(const Datagram& d) noexcept override {
    std::vector<std::shared_ptr<void>> ended;
    {
      MutexLock lock(s_.mu_);
      s_.onDatagram(d);
      ended.swap(s_.ended_);
    }
  }  // the objects of sessions that ended go here, with no lock held

 private:
  UdpServer& s_;
};

UdpServer::UdpServer(ServerOptions options)
    : options_(options),
      // Session ids start somewhere hard to guess (the cookie is what protects a session).
      nextSession_(static_cast<uint32_t>(detail::randomCookie() >> 40) + 1),
      replyShelf_(options.keepBufferBytes),
      resultShelf_(options.keepBufferBytes) {}

UdpServer::~UdpServer() { stop(); }

Status validate(const ServerOptions& o) {
  auto bad = [](const char* what) { return Status(Errc::kInvalidArgument, std::string("ServerOptions::") + what); };
  if (o.window == 0 || o.window > 1024) return bad("window must be 1..1024");
  if (o.maxDatagram < kMinDatagram || o.maxDatagram > kMaxDatagramLimit) return bad("maxDatagram must be 128..65507");
  if (o.maxMessageBytes == 0 || o.maxMessageBytes > UINT32_MAX) return bad("maxMessageBytes must be 1..2^32-1");
  if (o.fragmentWindow == 0 || o.fragmentWindow > kAckBits) return bad("fragmentWindow must be 1..2048");
  if (o.maxSessions == 0) return bad("maxSessions must be at least 1");
  if (o.maxHalfOpen == 0) return bad("maxHalfOpen must be at least 1");
  if (o.workers == 0 || o.workers > 256) return bad("workers must be 1..256");
  if (o.takeoverAfter.count() <= 0) return bad("takeoverAfter must be positive");
  if (o.receiveBuffers == 0) return bad("receiveBuffers must be at least 1");
  if (o.spinBeforeBlock.count() < 0) return bad("spinBeforeBlock must not be negative");
  // Clients keep alive at a third of it, and the coarse clock moves in steps of a few ms.
  if (o.sessionTimeout.count() < 0 || (o.sessionTimeout.count() > 0 && o.sessionTimeout.count() < 30) ||
      o.sessionTimeout.count() > UINT32_MAX) {
    return bad("sessionTimeout must be 0 (never) or 30 ms..2^32-1 ms");
  }
  return {};
}

Status UdpServer::add(std::string_view name, const InterfaceDescriptor& iface, void* server) {
  if (!threads_.empty()) return Status(Errc::kInvalidArgument, "add() after start()");
  // The same names as on the same host, so that one name can be exported on both paths.
  if (Status s = lrpc::detail::checkName(name); !s.isOk()) return s;
  if (server == nullptr || iface.dispatch == nullptr) return Status(Errc::kInvalidArgument, "no server or dispatch");
  auto [it, inserted] = services_.emplace(std::string(name), Service{&iface, server});
  // Not "'" + std::string: g++ 12 -O3 warns falsely (-Wrestrict) on literal + string.
  if (!inserted) return Status(Errc::kAlreadyExists, std::string("'").append(name).append("' already exported"));
  return {};
}

Result<uint16_t> UdpServer::bind(std::string_view address) {
  if (endpoint_) return Status(Errc::kInvalidArgument, "already bound");
  if (Status s = validate(options_); !s.isOk()) return s;
  auto keys = loadServerKeys(options_.security);
  if (!keys) return keys.status();
  if (keys->secure && options_.maxDatagram < kMinDatagram + secure::data::kOverhead) {
    return Status(Errc::kInvalidArgument, "ServerOptions::maxDatagram must be at least 160 for secure sessions");
  }
  EndpointOptions eo;
  eo.bindAddress = std::string(address);
  eo.maxDatagram = options_.maxDatagram;
  eo.receiveBuffers = options_.receiveBuffers;
  eo.spinBeforeBlock = options_.spinBeforeBlock;
  eo.emulated = options_.emulatedEndpoint;
  eo.gro = options_.gro;
  auto ep = openUdpEndpoint(eo);
  if (!ep) return ep.status();
  socketDatagram_ = options_.maxDatagram;
  netns_ = SocketNamespace::current();
  if (keys->secure) {
    selfKey_ = keys->self;
    psk_ = keys->responder.psk;
    auto sec = SecureServerEndpoint::create(std::move(*ep), std::move(*keys), options_.security);
    if (!sec) return sec.status();
    secure_ = sec->get();
    endpoint_ = std::move(*sec);
    // The socket still takes maxDatagram; the lrpc datagram inside a sealed one is 32 bytes
    // smaller, and that is what peers are offered and fragments are cut to.
    options_.maxDatagram -= secure::data::kOverhead;
  } else {
    endpoint_ = std::move(*ep);
  }
  lrpc::detail::logf(LogTopic::kTransport, "udp server on %s over the %s endpoint (%s)",
                     endpoint_->localAddress().toString().c_str(), endpoint_->kind(),
                     secure_ ? (options_.security.clearText ? "secure and clear text" : "secure") : "clear text");
  return endpoint_->localAddress().port;
}

void UdpServer::attach(std::unique_ptr<Endpoint> endpoint) {
  endpoint_ = std::move(endpoint);
  secure_ = nullptr;
}

std::optional<secure::PublicKey> UdpServer::publicKey() const noexcept {
  if (secure_ == nullptr) return std::nullopt;
  return secure_->publicKey();
}

std::optional<SecureServerStats> UdpServer::secureStats() const {
  if (secure_ == nullptr) return std::nullopt;
  return secure_->stats();
}

NetAddress UdpServer::address() const noexcept { return endpoint_ ? endpoint_->localAddress() : NetAddress{}; }
const char* UdpServer::endpointKind() const noexcept { return endpoint_ ? endpoint_->kind() : "none"; }

Status UdpServer::start() {
  if (Status s = validate(options_); !s.isOk()) return s;
  if (!endpoint_) return Status(Errc::kInvalidArgument, "start() before bind()");
  if (!threads_.empty()) return Status(Errc::kInvalidArgument, "already started");
  stop_.store(false);
  try {
    // One more than the handlers that may run at once: that one is always free to poll.
    threads_.reserve(options_.workers + 1);
    for (uint32_t i = 0; i <= options_.workers; ++i) threads_.emplace_back([this] { worker(); });
  } catch (const std::exception& e) {
    stop();
    return Status(Errc::kResourceExhausted, std::string("server thread: ") + e.what());
  }
  return {};
}

bool UdpServer::runsOn(std::thread::id id) const noexcept {
  for (const std::thread& t : threads_) {
    if (t.get_id() == id) return true;
  }
  return false;
}

Status UdpServer::attachCallbacks(PeerCallbacks& pc, std::span<const std::byte> where) noexcept {
  if (where.size() != 2) return Status(Errc::kBadFrame, "callback address: a 2-byte port expected");
  NetAddress back = pc.peer;
  back.port = static_cast<uint16_t>(std::to_integer<uint16_t>(where[0]) | (std::to_integer<uint16_t>(where[1]) << 8));
  if (back.port == 0) return Status(Errc::kBadFrame, "callback address: port 0");
  if (socketDatagram_ == 0) return Status(Errc::kUnsupported, "a server given its endpoint (attach) opens no channels back");
  try {
    MutexLock lock(pc.mu);
    // Once per session: a client's channel tells each session of its one host.
    if (pc.binding) {
      if (pc.port == back.port) return {};
      return Status(Errc::kAlreadyExists, "this session's callbacks already go to another port");
    }
    ClientOptions o;
    // Adaptive whatever our own mode: this channel is idle but for callbacks, and a busy
    // poller per client would hold a core each (and, with few cores, wait out time slices).
    o.mode = ReceiveMode::kAdaptive;
    o.emulatedEndpoint = options_.emulatedEndpoint;
    o.maxDatagram = socketDatagram_;
    // A handler's thread waits for it: a client that names a port nobody serves costs it this.
    o.connectTimeout = std::chrono::seconds(1);
    auto reverse = std::make_unique<ReverseSetup>();
    reverse->emulatedEndpoint = options_.emulatedEndpoint;
    reverse->maxDatagram = socketDatagram_;
    reverse->maxCapabilities = options_.maxCapabilities;
    reverse->netns = netns_;
    std::optional<secure::Initiator> initiator;
    // The key the client proved: the channel back accepts no other host at its address.
    std::optional<secure::PublicKey> clientKey = secure_ ? secure_->clientKeyOf(pc.peer) : std::nullopt;
    if (clientKey) {
      auto made = secure::Initiator::create(*selfKey_, *clientKey, psk_);
      if (!made.isOk()) return made.status();
      initiator.emplace(std::move(*made));
      reverse->self = selfKey_;
      reverse->peer = *clientKey;
      reverse->psk = psk_;
    }
    Result<std::shared_ptr<Binding>> binding = Status(Errc::kIoError, "not opened");
    if (Status ran = netns_.run([&] {
          binding = openBinding(back, kCallbackService, lrpc::detail::kCallbackInterface, o, std::move(initiator),
                                std::move(reverse));
          return binding.status();
        });
        !ran.isOk()) {
      return Status(ran.code(), "calling the client back at " + back.toString() + ": " + ran.detail());
    }
    pc.binding = std::move(*binding);
    pc.port = back.port;
    return {};
  } catch (const std::exception& e) {
    return Status(Errc::kResourceExhausted, {"callback channel: ", e.what()});
  }
}

void UdpServer::stop() {
  {
    // Answers still held by handlers go nowhere from here on.
    MutexLock lock(life_->mu);
    life_->alive = false;
  }
  {
    MutexLock lock(idleMu_);
    stop_.store(true);
  }
  idleCv_.notifyAll();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

void UdpServer::worker() noexcept {
  MessageBuffer fixed;  // this thread's result fixed part
  Sink sink(*this);
  while (!stop_.load(std::memory_order_relaxed)) {
    if (pollMu_.tryLock()) {
      poll(fixed, sink);
    } else {
      idle();
    }
  }
}

void UdpServer::poll(MessageBuffer& fixed, Sink& sink) noexcept {
  for (;;) {
    // Due handlers first: a thread that just took over runs those the stuck one left.
    for (;;) {
      Job job;
      if (!takeJob(job)) break;
      // Relaxed: only the holder of pollMu_ writes these, and pollMu_ orders the holders; the
      // watcher only needs to see them change eventually.
      const uint64_t starts = handlerStarts_.load(std::memory_order_relaxed) + 1;
      handlerStarts_.store(pollMu_, starts, std::memory_order_relaxed);
      inHandler_.store(pollMu_, true, std::memory_order_relaxed);
      pollMu_.unlock();
      bool deferred = false;
      Status result = execute(job, fixed, &deferred);
      if (!pollMu_.tryLock()) {
        // Another thread polls now; this one finishes its job, runs the jobs that waited for a
        // free handler slot meanwhile, and idles.
        afterHandler(job, std::move(result), deferred);
        runJobs(fixed);
        return;
      }
      inHandler_.store(pollMu_, false, std::memory_order_relaxed);
      afterHandler(job, std::move(result), deferred);
    }
    if (stop_.load(std::memory_order_relaxed)) break;
    if (!sleepWhileReadAside()) {
      // Bounded, so that stop() is seen within a tenth of a second in blocking mode.
      auto got = endpoint_->receive(sink, options_.mode, std::chrono::milliseconds(100));
      if (!got) lrpc::detail::logf(LogTopic::kTransport, "udp server receive: %s", got.status().toString().c_str());
    }
    expireSilent();
  }
  pollMu_.unlock();
}

void UdpServer::idle() noexcept {
  MutexLock lock(idleMu_);
  if (watcher_) {
    // Another idle thread watches; wake when it has taken over (or at stop).
    while (watcher_ && !stop_.load(std::memory_order_relaxed)) idleCv_.wait(idleMu_);
    return;
  }
  watcher_ = true;
  uint64_t seen = ~uint64_t{0};
  // While no handler starts, the watcher looks less often (up to every 10 * takeoverAfter):
  // an idle server then wakes a few times a second, not hundreds. A handler that starts
  // after such a pause is noticed within one long and one short period.
  auto period = options_.takeoverAfter;
  const auto longest = options_.takeoverAfter * 10;
  while (!stop_.load(std::memory_order_relaxed)) {
    idleCv_.waitFor(idleMu_, period);
    // The same handler running since the last look (no other started meanwhile): the poller
    // is stuck in it, so this thread polls instead. tryLock fails if it is back meanwhile.
    uint64_t starts = handlerStarts_.load(std::memory_order_relaxed);
    const bool running = inHandler_.load(std::memory_order_relaxed);
    bool stuck = running && starts == seen;
    period = (starts != seen || running) ? options_.takeoverAfter : std::min(period * 2, longest);
    seen = starts;
    if (stuck && pollMu_.tryLock()) {
      inHandler_.store(pollMu_, false, std::memory_order_relaxed);
      watcher_ = false;
      lock.unlock();
      idleCv_.notifyOne();  // another idle thread becomes the watcher
      // Poll right away; worker() takes pollMu_ again at once. (Handing the locked mutex over
      // would need idle() to tell worker() so; a tryLock that loses a race just idles.)
      pollMu_.unlock();
      return;
    }
  }
  watcher_ = false;
  lock.unlock();
  idleCv_.notifyOne();  // another idle thread becomes the watcher
}

Result<size_t> UdpServer::pollOnce(std::chrono::nanoseconds timeout) noexcept {
  if (!endpoint_) return Status(Errc::kInvalidArgument, "pollOnce() before bind()");
  if (Status s = validate(options_); !s.isOk()) return s;
  Sink sink(*this);
  auto got = endpoint_->receive(sink, ReceiveMode::kBlocking, timeout);
  expireSilent();
  MessageBuffer fixed;
  runJobs(fixed);
  return got;
}

bool UdpServer::receivesAside() const noexcept { return endpoint_ && endpoint_->receivesAside(); }

bool UdpServer::takeArrived() noexcept {
  if (!endpoint_) return false;
  Sink sink(*this);
  auto got = endpoint_->receiveAside(sink);
  return got && *got > 0;
}

void UdpServer::runArrived() noexcept {
  MessageBuffer fixed;
  runJobs(fixed);
}

void UdpServer::readingAside(std::optional<std::chrono::steady_clock::time_point> now) noexcept {
  if (now) {
    // Relaxed: a hint for sleepWhileReadAside, which looks again after its sleep.
    asideUntil_.store(std::chrono::duration_cast<std::chrono::nanoseconds>((*now + kAsideLinger).time_since_epoch()).count(),
                      std::memory_order_relaxed);
    return;
  }
  {
    MutexLock lock(idleMu_);
    asideUntil_.store(0, std::memory_order_relaxed);
  }
  idleCv_.notifyAll();  // a thread sleeping off the socket goes back to it now
}

bool UdpServer::sleepWhileReadAside() noexcept {
  const int64_t until = asideUntil_.load(std::memory_order_relaxed);
  if (until == 0) return false;
  const auto now = std::chrono::steady_clock::now();
  const int64_t nowNs = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  if (nowNs >= until) return false;
  MutexLock lock(idleMu_);
  // The caller's last read may move `until` on meanwhile: looked at again on waking.
  if (asideUntil_.load(std::memory_order_relaxed) != 0 && !stop_.load(std::memory_order_relaxed)) {
    idleCv_.waitFor(idleMu_, std::chrono::nanoseconds(until - nowNs));
  }
  return true;
}

void UdpServer::runJobs(MessageBuffer& fixed) noexcept {
  for (;;) {
    Job job;
    if (!takeJob(job)) return;
    bool deferred = false;
    Status result = execute(job, fixed, &deferred);
    afterHandler(job, std::move(result), deferred);
  }
}

bool UdpServer::takeJob(Job& job) noexcept {
  MutexLock lock(mu_);
  if (jobs_.empty() || handlersRunning_ >= options_.workers) return false;
  job = std::move(jobs_.front());
  jobs_.pop_front();
  ++handlersRunning_;
  return true;
}

void UdpServer::afterHandler(const Job& job, Status result, bool deferred) noexcept {
  MutexLock lock(mu_);
  --handlersRunning_;
  if (!deferred) finishJob(job, std::move(result));
}

}  // namespace lrpc::net
