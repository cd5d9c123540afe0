#include "transport/server.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "runtime/base/log.h"
#include "transport/random.h"

namespace lrpc::net {

namespace {
constexpr size_t kMaxErrorText = 1024;

std::string describe(const char* name, uint64_t id, uint64_t hash) {
  char buf[400];
  std::snprintf(buf, sizeof buf, "%s (id 0x%016" PRIx64 ", signature 0x%016" PRIx64 ")", name, id, hash);
  return buf;
}
}  // namespace

class UdpServer::Sink final : public DatagramSink {
 public:
  explicit Sink(UdpServer& s) : s_(s) {}
  void onDatagram(const Datagram& d) noexcept override { s_.onDatagram(d); }

 private:
  UdpServer& s_;
};

// The ServerCall the generated dispatch sees: arguments straight from the datagram (or the
// reassembled request); the fixed results into the server's `fixed` buffer, copied to the
// head of the slot's cached reply once the handler is done, and the result tail straight into
// that reply, where it will leave from, so a large result is not copied a second time.
class UdpServer::Call final : public ServerCall {
 public:
  Call(std::span<const std::byte> args, std::span<const std::byte> tail, MessageBuffer& fixed, MessageBuffer& reply,
       BufferShelf& shelf)
      : ServerCall(args, tail, fixed.data()), fixedBytes_(fixed.size()), reply_(reply), shelf_(shelf) {}
  Result<std::span<std::byte>> resultTail(size_t n) noexcept override {
    if (reserved_) return Status(Errc::kInvalidArgument, "resultTail reserved twice");
    if (n > UINT32_MAX) return Status(Errc::kResourceExhausted, "result tail too large");
    size_t total = fixedBytes_ + n;
    // Emptied first, so that a lent buffer takes over no bytes; not zeroed: the generated
    // code writes the whole tail, and execute() the fixed part.
    (void)reply_.resize(0);
    if (total > reply_.capacity()) shelf_.lend(reply_, total);
    if (Status s = reply_.resizeForOverwrite(total); !s.isOk()) return s;
    reserved_ = true;
    return reply_.span().subspan(fixedBytes_);
  }
  // The datagram or reassembled request is ours alone, and stays put while the handler runs
  // (it runs on the polling thread, before the buffer goes back to the free queue).
  bool argTailPrivate() const noexcept override { return true; }
  bool reserved() const noexcept { return reserved_; }

  // One large result value is kept, not copied: the reply is cached in the slot until the
  // client has it all, and its fragments are sent from the value's own storage (OutMessage).
  // One at most, so that a fragment spans at most two pieces.
  bool keepsResults() const noexcept override { return kept_ == nullptr; }
  void keepResult(std::byte* dst, std::unique_ptr<KeptResult> kept) noexcept override {
    keptAt_ = static_cast<size_t>(dst - reply_.data());
    kept_ = std::move(kept);
  }
  std::unique_ptr<KeptResult> takeKept(size_t* at) noexcept {
    *at = keptAt_;
    return std::move(kept_);
  }

 private:
  size_t fixedBytes_;
  MessageBuffer& reply_;
  BufferShelf& shelf_;
  bool reserved_ = false;
  std::unique_ptr<KeptResult> kept_;
  size_t keptAt_ = 0;
};

UdpServer::UdpServer(ServerOptions options)
    : options_(options),
      // Session ids start somewhere hard to guess (the cookie is what protects a session).
      nextSession_(static_cast<uint32_t>(detail::randomCookie() >> 40) + 1),
      replyShelf_(options.keepBufferBytes) {}

UdpServer::~UdpServer() { stop(); }

Status UdpServer::add(std::string_view name, const InterfaceDescriptor& iface, void* server) {
  if (thread_.joinable()) return Status(Errc::kInvalidArgument, "add() after start()");
  if (name.empty() || name.size() > kMaxNameBytes) return Status(Errc::kInvalidArgument, "name must be 1..256 bytes");
  if (server == nullptr || iface.dispatch == nullptr) return Status(Errc::kInvalidArgument, "no server or dispatch");
  auto [it, inserted] = services_.emplace(std::string(name), Service{&iface, server});
  // Not "'" + std::string: g++ 12 -O3 warns falsely (-Wrestrict) on literal + string.
  if (!inserted) return Status(Errc::kAlreadyExists, std::string("'").append(name).append("' already exported"));
  return {};
}

Result<uint16_t> UdpServer::bind(std::string_view address) {
  if (endpoint_) return Status(Errc::kInvalidArgument, "already bound");
  EndpointOptions eo;
  eo.bindAddress = std::string(address);
  eo.maxDatagram = options_.maxDatagram;
  eo.receiveBuffers = options_.receiveBuffers;
  eo.spinBeforeBlock = options_.spinBeforeBlock;
  eo.emulated = options_.emulatedEndpoint;
  auto ep = openUdpEndpoint(eo);
  if (!ep) return ep.status();
  endpoint_ = std::move(*ep);
  lrpc::detail::logf(LogTopic::kTransport, "udp server on %s over the %s endpoint", endpoint_->localAddress().toString().c_str(),
               endpoint_->kind());
  return endpoint_->localAddress().port;
}

void UdpServer::attach(std::unique_ptr<Endpoint> endpoint) { endpoint_ = std::move(endpoint); }

NetAddress UdpServer::address() const noexcept { return endpoint_ ? endpoint_->localAddress() : NetAddress{}; }
const char* UdpServer::endpointKind() const noexcept { return endpoint_ ? endpoint_->kind() : "none"; }

Status UdpServer::start() {
  if (!endpoint_) return Status(Errc::kInvalidArgument, "start() before bind()");
  if (thread_.joinable()) return Status(Errc::kInvalidArgument, "already started");
  stop_.store(false);
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::exception& e) {
    return Status(Errc::kResourceExhausted, std::string("server thread: ") + e.what());
  }
  return {};
}

void UdpServer::stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

void UdpServer::run() {
  Sink sink(*this);
  while (!stop_.load(std::memory_order_relaxed)) {
    // Bounded, so that stop() is seen within a tenth of a second in blocking mode.
    auto got = endpoint_->receive(sink, options_.mode, std::chrono::milliseconds(100));
    if (!got) lrpc::detail::logf(LogTopic::kTransport, "udp server receive: %s", got.status().toString().c_str());
  }
}

Result<size_t> UdpServer::pollOnce(std::chrono::nanoseconds timeout) noexcept {
  if (!endpoint_) return Status(Errc::kInvalidArgument, "pollOnce() before bind()");
  Sink sink(*this);
  return endpoint_->receive(sink, ReceiveMode::kBlocking, timeout);
}

void UdpServer::sendHeaderOnly(NetAddress to, PacketHeader h, std::span<const std::byte> payload) noexcept {
  h.total = static_cast<uint32_t>(payload.size());
  OutDatagram d{to, {{&h, sizeof h}, {const_cast<std::byte*>(payload.data()), payload.size()}}, 2};
  (void)endpoint_->send({&d, 1});
}

void UdpServer::onDatagram(const Datagram& d) noexcept {
  auto decoded = decodePacket(d.bytes);
  if (!decoded) return;  // garbage: dropped without a word
  const Packet& p = *decoded;
  if (p.type() == PacketType::kHello) {
    onHello(d, p);
    return;
  }
  auto it = sessions_.find(p.header.session);
  if (it == sessions_.end()) {
    // Unknown session (we restarted, or evicted it): tell the client so it fails fast
    // instead of retrying into silence. Echoes its cookie, so only that client accepts it.
    if (p.type() == PacketType::kRequest || p.type() == PacketType::kAck) {
      PacketHeader h = makeHeader(PacketType::kReset, p.header.session, p.header.cookie, p.header.seq);
      sendHeaderOnly(d.from, h, {});
    }
    return;
  }
  Session& s = it->second;
  // Stale or spoofed: wrong cookie or another source address.
  if (p.header.cookie != s.cookie || !(d.from == s.peer)) return;
  s.lastActive = ++tick_;
  switch (p.type()) {
    case PacketType::kRequest: onRequest(s, p); break;
    case PacketType::kAck:
      if ((p.header.flags & kFlagAckOfReply) != 0) onAck(s, p);
      break;
    case PacketType::kBye:
      byNonce_.erase(s.nonce);
      sessions_.erase(it);
      sessionCount_.store(sessions_.size(), std::memory_order_relaxed);
      break;
    default: break;
  }
}

void UdpServer::onHello(const Datagram& d, const Packet& p) noexcept {
  PacketHeader reply = makeHeader(PacketType::kWelcome, 0, p.header.cookie, 0);
  auto hello = decodeHello(p.payload);
  if (!hello) return;
  if (auto known = byNonce_.find(p.header.cookie); known != byNonce_.end()) {
    // A retransmitted hello: answer with the session already made for it.
    auto it = sessions_.find(known->second);
    if (it != sessions_.end() && it->second.peer == d.from) {
      Session& s = it->second;
      reply.session = s.id;
      WelcomeBody w{s.cookie, s.window, static_cast<uint32_t>(options_.maxDatagram), s.service->iface->procedureCount, 0};
      sendHeaderOnly(d.from, reply, {reinterpret_cast<const std::byte*>(&w), sizeof w});
    }
    return;
  }
  auto refuse = [&](Errc code, const std::string& why) {
    reply.status = static_cast<uint8_t>(code);
    std::string text = why.substr(0, kMaxErrorText);
    sendHeaderOnly(d.from, reply, {reinterpret_cast<const std::byte*>(text.data()), text.size()});
  };
  auto svc = services_.find(hello->name);
  if (svc == services_.end()) {
    refuse(Errc::kNotFound, "no interface exported as '" + std::string(hello->name) + "'");
    return;
  }
  const InterfaceDescriptor& iface = *svc->second.iface;
  if (iface.id != hello->body.ifaceId || iface.signatureHash != hello->body.signatureHash) {
    std::string client(hello->ifaceName);
    refuse(Errc::kBindingRejected,
           "interface mismatch: client has " + describe(client.c_str(), hello->body.ifaceId, hello->body.signatureHash) +
               ", server exports " + describe(iface.name ? iface.name : "?", iface.id, iface.signatureHash));
    return;
  }
  if (hello->body.window == 0 || hello->body.maxDatagram < kMinDatagram) {
    refuse(Errc::kInvalidArgument, "window or datagram size out of range");
    return;
  }
  if (sessions_.size() >= options_.maxSessions) evictOldest();
  Session s;
  s.id = nextSession_++;
  if (nextSession_ == 0) nextSession_ = 1;
  s.cookie = detail::randomCookie();
  s.nonce = p.header.cookie;
  s.peer = d.from;
  s.service = &svc->second;
  s.window = std::min(hello->body.window, options_.window);
  s.fragmentBytes = fragmentPayload(std::min<size_t>(hello->body.maxDatagram, options_.maxDatagram));
  s.lastActive = ++tick_;
  s.slots.reset(new (std::nothrow) Slot[s.window]);
  if (!s.slots) {
    refuse(Errc::kResourceExhausted, "no memory for the session");
    return;
  }
  reply.session = s.id;
  WelcomeBody w{s.cookie, s.window, static_cast<uint32_t>(options_.maxDatagram), iface.procedureCount, 0};
  byNonce_[s.nonce] = s.id;
  sessions_.emplace(s.id, std::move(s));
  sessionCount_.store(sessions_.size(), std::memory_order_relaxed);
  sendHeaderOnly(d.from, reply, {reinterpret_cast<const std::byte*>(&w), sizeof w});
}

void UdpServer::evictOldest() {
  auto oldest = sessions_.end();
  for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
    if (oldest == sessions_.end() || it->second.lastActive < oldest->second.lastActive) oldest = it;
  }
  if (oldest == sessions_.end()) return;
  byNonce_.erase(oldest->second.nonce);
  sessions_.erase(oldest);
}

void UdpServer::onRequest(Session& s, const Packet& p) noexcept {
  const PacketHeader& h = p.header;
  Slot& slot = s.slots[h.seq % s.window];
  if (slot.state != SlotState::kEmpty && h.seq < slot.seq) return;  // older than the window: stale
  const bool fragment = (h.flags & kFlagFragment) != 0;
  if (slot.state != SlotState::kEmpty && h.seq == slot.seq) {
    switch (slot.state) {
      case SlotState::kDone:
        // A duplicate of an executed call: answer from the reply cache, never run it again.
        // (The client resends only on its timeout, so this is a timeout: resend missing.)
        sendReply(s, slot, Resend::kMissing);
        return;
      case SlotState::kDelivered: return;
      case SlotState::kReceiving: break;  // another fragment of the request
      case SlotState::kEmpty: return;
    }
  } else {
    // A new call (seq above the slot's: the client finished the slot's previous call).
    slot.seq = h.seq;
    slot.procedure = h.procedure;
    slot.status = 0;
    slot.fragmentedReply = false;
    slot.kept.reset();
    slot.reassembly.clear();
    slot.request.reset();  // abandoned mid-reassembly (the client gave up on it)
    if (!fragment) {
      spareRequest_.reset();  // back to small calls: give the large buffer back
      execute(s, slot, p.payload);
      return;
    }
    if (h.total > options_.maxMessageBytes) {
      slot.state = SlotState::kDone;
      slot.status = static_cast<uint8_t>(Errc::kResourceExhausted);
      static constexpr char kText[] = "request larger than the server's maxMessageBytes";
      (void)slot.reply.resize(sizeof kText - 1);
      std::memcpy(slot.reply.data(), kText, sizeof kText - 1);
      sendReply(s, slot, Resend::kNone);
      return;
    }
    slot.request = std::move(spareRequest_);
    if (!slot.request) slot.request.reset(new (std::nothrow) MessageBuffer);
    if (!slot.request || !slot.reassembly.begin(h.total, s.fragmentBytes, *slot.request, ackEvery(options_.fragmentWindow))
                              .isOk()) {
      slot.request.reset();
      slot.state = SlotState::kEmpty;
      slot.seq = h.seq - 1;  // let a retransmission try again
      return;
    }
    slot.state = SlotState::kReceiving;
  }
  if (!fragment || h.procedure != slot.procedure) return;
  auto acc = slot.reassembly.accept(h, p.payload);
  if (!acc) return;
  PacketHeader ackHeader = makeHeader(PacketType::kAck, s.id, s.cookie, h.seq);
  if (slot.reassembly.complete()) {
    AckBody ack = slot.reassembly.ack();
    sendHeaderOnly(s.peer, ackHeader, {reinterpret_cast<const std::byte*>(&ack), sizeof ack});
    slot.reassembly.clear();
    execute(s, slot, slot.request->span());
    spareRequest_ = std::move(slot.request);
    return;
  }
  if (slot.reassembly.ackDue()) {
    AckBody ack = slot.reassembly.ack();
    sendHeaderOnly(s.peer, ackHeader, {reinterpret_cast<const std::byte*>(&ack), sizeof ack});
    slot.reassembly.acked();
  }
}

void UdpServer::execute(Session& s, Slot& slot, std::span<const std::byte> frame) noexcept {
  slot.state = SlotState::kDone;
  const InterfaceDescriptor& iface = *s.service->iface;
  Status result;
  if (slot.procedure >= iface.procedureCount) {
    result = Status(Errc::kInvalidArgument, "no procedure " + std::to_string(slot.procedure));
  } else {
    const ProcedureDescriptor& pd = iface.procedures[slot.procedure];
    if (frame.size() < pd.argsSize) {
      result = Status(Errc::kBadFrame, "request shorter than the argument frame");
    } else if (Status st = fixed_.resize(0); !st.isOk()) {
      result = st;
    } else if (Status st2 = fixed_.resize(pd.resultsSize); !st2.isOk()) {  // zeroed
      result = st2;
    } else {
      Call call(frame.first(pd.argsSize), frame.subspan(pd.argsSize), fixed_, slot.reply, replyShelf_);
      executed_.fetch_add(1, std::memory_order_relaxed);
      result = iface.dispatch(s.service->server, slot.procedure, call);
      if (result.isOk()) slot.kept = call.takeKept(&slot.keptAt);
      if (result.isOk() && !call.reserved()) {
        (void)slot.reply.resize(0);  // no tail: the reply is the fixed part alone
        result = slot.reply.resize(fixed_.size());
      }
      if (result.isOk() && fixed_.size() > 0) std::memcpy(slot.reply.data(), fixed_.data(), fixed_.size());
    }
  }
  if (!result.isOk()) {
    slot.status = static_cast<uint8_t>(result.code());
    slot.kept.reset();  // the reply is the error text alone
    const std::string& text = result.detail();
    size_t n = std::min(text.size(), kMaxErrorText);
    if (slot.reply.resize(n).isOk() && n > 0) std::memcpy(slot.reply.data(), text.data(), n);
  }
  sendReply(s, slot, Resend::kNone);
}

void UdpServer::sendReply(Session& s, Slot& slot, Resend resend) noexcept {
  PacketHeader h = makeHeader(PacketType::kReply, s.id, s.cookie, slot.seq);
  h.procedure = slot.procedure;
  h.status = slot.status;
  h.total = static_cast<uint32_t>(slot.reply.size());
  if (slot.reply.size() <= s.fragmentBytes && !slot.kept) {  // a kept value never fits one datagram
    if (kHeaderBytes + slot.reply.size() <= kCellBytes) h.flags |= kFlagSingleCell;
    sendHeaderOnly(s.peer, h, slot.reply.span());
    return;
  }
  h.flags |= kFlagFragment;
  if (!slot.fragmentedReply) {
    slot.fragmentedReply = true;
    const std::span<const std::byte> reply = std::as_const(slot.reply).span();
    slot.sender.reset(slot.kept ? OutMessage(reply, slot.keptAt, slot.kept->bytes()) : OutMessage(reply),
                      s.fragmentBytes, options_.fragmentWindow);
    resend = Resend::kNone;
  }
  scratch_.clear();
  if (resend == Resend::kMissing) slot.sender.takeMissing(scratch_);
  if (resend == Resend::kHoles) slot.sender.takeHoles(scratch_);
  slot.sender.takeNew(scratch_);
  (void)batch_.send(*endpoint_, s.peer, h, scratch_, slot.sender);
}

void UdpServer::onAck(Session& s, const Packet& p) noexcept {
  Slot& slot = s.slots[p.header.seq % s.window];
  if (slot.seq != p.header.seq || slot.state != SlotState::kDone) return;
  auto ack = decodeAck(p.payload);
  if (!ack) return;
  if (ack->complete) {
    // The client has the whole reply: stop sending it, and give a large cached copy's memory
    // to the shelf (or back to the system) rather than keep it in this slot until reused.
    slot.state = SlotState::kDelivered;
    if (slot.reply.onHeap()) replyShelf_.put(slot.reply);
    slot.kept.reset();
    return;
  }
  const bool timedOut = (p.header.flags & kFlagResend) != 0;
  if (!slot.fragmentedReply) {
    if (timedOut) sendReply(s, slot, Resend::kMissing);  // the client never got the reply
    return;
  }
  (void)slot.sender.onAck(*ack);
  sendReply(s, slot, timedOut ? Resend::kMissing : Resend::kHoles);
}

}  // namespace lrpc::net
