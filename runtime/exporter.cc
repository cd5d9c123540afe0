#include "runtime/exporter.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <list>
#include <mutex>
#include <new>
#include <optional>
#include <thread>

#include "runtime/astack.h"
#include "runtime/introspect.h"
#include "runtime/base/log.h"
#include "runtime/names.h"
#include "runtime/protocol.h"
#include "runtime/shm.h"
#include "runtime/transfer.h"

namespace lrpc {

namespace {

using detail::Message;
using detail::MsgType;

// How long a new connection may take to say Hello before the clerk gives up on it.
constexpr int kHelloTimeoutMs = 5'000;
// How long the acceptor waits for the Hello of a client it refuses for lack of room.
constexpr int kRefuseReadMs = 100;
// How long it waits for the Hello of a uid it refuses: short, so that a uid that may not import
// cannot slow the acceptor down much by connecting and staying silent.
constexpr int kRefuseUidReadMs = 20;

bool uidAllowed(const ServerOptions& opts, uid_t uid) {
  return uid == ::geteuid() || std::find(opts.allowUids.begin(), opts.allowUids.end(), uid) != opts.allowUids.end();
}
// Out-of-band segments are rounded up to a power of two (at least this), so that a
// growing stream of calls re-grows the segment a logarithmic number of times.
constexpr uint64_t kMinSegmentBytes = 64 * 1024;
// A streamed argument that makes no progress for this long ends its call with kBadFrame: a
// live client that stops writing must not hold the server thread forever.
constexpr int64_t kStreamStallNs = 1'000'000'000;

uint64_t segmentSize(uint64_t n) {
  uint64_t s = kMinSegmentBytes;
  while (s < n) s <<= 1;
  return s;
}

void signal(int eventFd) {
  uint64_t one = 1;
  ssize_t r = ::write(eventFd, &one, sizeof one);
  (void)r;  // an eventfd write only fails at a counter overflow, which leaves it readable anyway
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016" PRIx64, v);
  return buf;
}

}  // namespace

struct Export;

// Server-side state of one A-stack of one binding: its server thread and its out-of-band segments.
struct ServerSlot {
  uint32_t index = 0;
  uint32_t procedure = 0;
  std::atomic<bool> stop{false};
  std::thread thread;
  alignas(kCacheLine) std::atomic<uint64_t> calls{0};  // written only by `thread`
  std::atomic<uint64_t> errors{0};
  std::mutex segMu;
  std::shared_ptr<SharedMemory> argSegment;     // guarded by segMu
  std::shared_ptr<SharedMemory> resultSegment;  // guarded by segMu
};

// One binding: a client process bound to one exported name. Its clerk thread owns it.
struct Connection {
  Export* exp = nullptr;
  OwnedFd sock;
  std::optional<SharedMemory> region;
  uint64_t key = 0;
  TransferMode mode = TransferMode::kAdaptive;
  std::vector<std::unique_ptr<ServerSlot>> slots;  // one per A-stack, made at handshake
  mutable std::mutex threadsMu;                    // guards starting threads vs. stats()
  std::atomic<bool> finished{false};
  bool query = false;  // an operator's query (runtime/introspect.h), not a binding
  std::thread clerk;

  AStackControl* control(uint32_t i) const;
  void run();
  Status handshake();
  bool handle(const Message& m, OwnedFd fd);
  // Runs calls on the slot's A-stack; `last` is the sequence seen before the client was told
  // the thread exists (so its first call is not mistaken for an old one).
  void serve(ServerSlot* slot, uint32_t last);
  uint32_t serveOne(ServerSlot* slot, AStackControl* ctl);
  void stopThreads();
};

struct Export {
  Exporter::Impl* owner = nullptr;
  std::string name;
  const InterfaceDescriptor* iface = nullptr;
  void* impl = nullptr;
  std::optional<RegionLayout> layout;
  std::string sockPath;
  OwnedFd nameLock; // flock held while we serve the name
  OwnedFd listen;
  OwnedFd stopFd;   // eventfd, readable once the Exporter shuts down
  OwnedFd reapFd;   // eventfd, a clerk finished: join it
  std::thread acceptor;
  std::atomic<uint64_t> bindingsLive{0};  // of this name (the Exporter's counter sums all names)
  mutable std::mutex connMu;
  std::list<std::unique_ptr<Connection>> conns;  // guarded by connMu

  void accept();
  void reap(bool all);
};

struct Exporter::Impl {
  const Exporter* self = nullptr;  // for the stats a query asks for (an Exporter never moves)
  ServerOptions options;
  Result<std::string> dir = Status(Errc::kNotFound);
  std::string noDir;  // what dir() returns when `dir` failed
  std::atomic<uint64_t> bindingsLive{0}, bindingsTotal{0}, bindingsRejected{0}, serverThreads{0};
  std::atomic<uint64_t> callsFinished{0}, errorsFinished{0};  // of threads already joined
  mutable std::mutex mu;
  std::vector<std::unique_ptr<Export>> exports;  // guarded by mu
};

// ---- server call ----

namespace {

class AStackServerCall final : public ServerCall {
 public:
  AStackServerCall(std::span<const std::byte> args, std::span<const std::byte> tail, std::byte* results,
                   Connection* conn, ServerSlot* slot, const ProcedureLayout& pl, std::byte* frame,
                   const std::atomic<uint32_t>* argReady) noexcept
      : ServerCall(args, tail, results), conn_(conn), slot_(slot), pl_(pl), frame_(frame), argReady_(argReady) {}

  Status awaitArgTail(size_t end) noexcept override {
    if (argReady_ == nullptr || end <= ready_) return {};
    if (end > argTail_.size()) return Status(Errc::kBadFrame, "argument stream read past its tail");
    uint32_t spins = 0;
    uint32_t lastSeen = ready_;
    int64_t stalledSince = 0;
    for (;;) {
      // Acquire: pairs with the client's release after it copied the bytes it counts.
      uint32_t v = argReady_->load(std::memory_order_acquire);
      if (v >= end) {
        ready_ = v < argTail_.size() ? v : static_cast<uint32_t>(argTail_.size());
        return {};
      }
      if (++spins % detail::kYieldEvery != 0) {
        detail::cpuRelax();
        continue;
      }
      ::sched_yield();  // the writer may share our core
      // Relaxed: the flag only ends the wait; nothing is read because of it.
      if (slot_->stop.load(std::memory_order_relaxed)) return Status(Errc::kPeerDied, "client went away mid-argument");
      int64_t now = detail::monotonicNs();
      if (v != lastSeen) {
        lastSeen = v;
        stalledSince = now;
      } else if (stalledSince == 0) {
        stalledSince = now;
      } else if (now - stalledSince > kStreamStallNs) {
        return Status(Errc::kBadFrame, "the client stopped writing its streamed argument");
      }
    }
  }

  Result<std::span<std::byte>> resultTail(size_t n) noexcept override {
    if (reserved_) return Status(Errc::kInvalidArgument, "resultTail reserved twice");
    if (n <= pl_.tailRoom) {
      reserved_ = true;
      length_ = static_cast<uint32_t>(n);
      return std::span<std::byte>(frame_ + pl_.resultTailOff, n);
    }
    if (n > conn_->exp->owner->options.maxOutOfBandBytes || n > UINT32_MAX) {
      return Status(Errc::kResourceExhausted, "result tail larger than the server allows");
    }
    std::lock_guard<std::mutex> lock(slot_->segMu);
    if (!slot_->resultSegment || slot_->resultSegment->size() < n) {
      Result<SharedMemory> seg = SharedMemory::create("lrpc-results", segmentSize(n));
      if (!seg.isOk()) return seg.status();
      auto fresh = std::make_shared<SharedMemory>(std::move(*seg));
      // Sent before the return is published, so the client finds it queued when it looks.
      Message m{MsgType::kResultSegment, slot_->index, fresh->size(), 0, {}};
      if (Status s = detail::sendMessage(conn_->sock.get(), &m, sizeof m, fresh->fd()); !s.isOk()) return s;
      slot_->resultSegment = std::move(fresh);
    }
    reserved_ = true;
    length_ = static_cast<uint32_t>(n);
    flags_ = kTailOutOfBand;
    return std::span<std::byte>(slot_->resultSegment->data(), n);
  }

  uint32_t length() const noexcept { return length_; }
  uint8_t flags() const noexcept { return flags_; }

 private:
  Connection* conn_;
  ServerSlot* slot_;
  const ProcedureLayout& pl_;
  std::byte* frame_;
  const std::atomic<uint32_t>* argReady_;  // null unless the argument tail is streamed
  uint32_t ready_ = 0;                      // argument tail bytes known final
  bool reserved_ = false;
  uint32_t length_ = 0;
  uint8_t flags_ = 0;
};

}  // namespace

// ---- connection (clerk) ----

AStackControl* Connection::control(uint32_t i) const {
  return reinterpret_cast<AStackControl*>(region->data() + exp->layout->astackOffset(i));
}

// Returns how many bytes from the return block on the call wrote (results, tail or error text).
uint32_t Connection::serveOne(ServerSlot* slot, AStackControl* ctl) {
  const ProcedureLayout& pl = exp->layout->procedure(slot->procedure);
  std::byte* frame = reinterpret_cast<std::byte*>(ctl) + kControlBytes;
  // Each control field is read once; from here on only the private copies are used.
  uint64_t callKey = detail::loadOnce(ctl->key);
  uint32_t procedure = detail::loadOnce(ctl->procedure);
  uint32_t argTail = detail::loadOnce(ctl->argTail);
  uint8_t argFlags = detail::loadOnce(ctl->argFlags);

  Status s;
  std::shared_ptr<SharedMemory> argSegment;  // keeps a segment mapped while the handler reads it
  std::span<const std::byte> tail;
  if (callKey != key) {
    s = Status(Errc::kBindingRejected, "call carries a forged binding key");
  } else if (procedure != slot->procedure) {
    s = Status(Errc::kBadFrame, "procedure does not match the A-stack");
  } else if (argFlags == kTailOutOfBand || argFlags == (kTailOutOfBand | kTailStreaming)) {
    {
      std::lock_guard<std::mutex> lock(slot->segMu);
      argSegment = slot->argSegment;
    }
    if (!argSegment || argTail > argSegment->size()) {
      s = Status(Errc::kBadFrame, "argument tail beyond its out-of-band segment");
    } else {
      tail = std::span<const std::byte>(argSegment->data(), argTail);
    }
  } else if (argFlags != 0 || argTail > pl.tailRoom) {
    s = Status(Errc::kBadFrame, "argument tail longer than the A-stack");
  } else {
    tail = std::span<const std::byte>(frame + pl.argTailOff, argTail);
  }

  uint32_t resultTail = 0;
  uint8_t resultFlags = 0;
  auto* ret = reinterpret_cast<ReturnControl*>(frame + pl.returnOff);
  if (s.isOk()) {
    // The result part is not cleared: the generated dispatch writes every field, and bytes
    // between fields hold only what this server wrote there before (astack_format.md).
    AStackServerCall call(std::span<const std::byte>(frame, pl.argsSize), tail, frame + pl.resultsOff, this, slot,
                          pl, frame, (argFlags & kTailStreaming) != 0 ? &ctl->argReady : nullptr);
    s = exp->iface->dispatch(exp->impl, procedure, call);
    resultTail = call.length();
    resultFlags = call.flags();
  }
  slot->calls.store(slot->calls.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (s.isOk()) {
    detail::storeOnce(ret->resultTail, resultTail);
    detail::storeOnce(ret->resultFlags, resultFlags);
    detail::storeOnce(ret->status, uint8_t{0});
    return pl.resultTailOff - pl.returnOff + (resultFlags == 0 ? resultTail : 0);
  }
  slot->errors.store(slot->errors.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (detail::logOn(LogTopic::kErrors)) {
    detail::logf(LogTopic::kErrors, "\"%s\": call of procedure %u answered with %s", exp->name.c_str(), procedure,
                 s.toString().c_str());
  }
  // The detail text goes where the results would, truncated to the rest of the A-stack (at
  // least kMinErrorBytes): the results are not valid on an error, and those lines are ours.
  std::string_view text = s.detail().empty() ? errcName(s.code()) : std::string_view(s.detail());
  uint32_t len = static_cast<uint32_t>(std::min<size_t>(text.size(), pl.frameBytes - pl.resultsOff));
  std::memcpy(frame + pl.resultsOff, text.data(), len);
  detail::storeOnce(ret->resultTail, len);
  detail::storeOnce(ret->resultFlags, uint8_t{0});
  detail::storeOnce(ret->status, static_cast<uint8_t>(s.code()));
  return kControlBytes + len;
}

void Connection::serve(ServerSlot* slot, uint32_t last) {
  AStackControl* ctl = control(slot->index);
  auto* ret = reinterpret_cast<ReturnControl*>(region->data() + exp->layout->returnOffset(slot->index));
  for (;;) {
    uint32_t seq = 0;
    if (detail::waitForCall(ctl->callWord, ctl->serverSleeping, last, mode, slot->stop, &seq) != detail::WaitResult::kReady) return;
    last = seq;
    uint32_t written = serveOne(slot, ctl);
    detail::ring(ret->returnWord, ret->clientSleeping, seq);
    detail::demoteAfterFirstLine(ret, written);
  }
}

void Connection::stopThreads() {
  for (auto& slot : slots) {
    if (!slot->thread.joinable()) continue;
    // Release: pairs with the acquire of `stop` in waitForCall after it sees the word change.
    slot->stop.store(true, std::memory_order_release);
    detail::stopWaiter(control(slot->index)->callWord);
    slot->thread.join();
    std::lock_guard<std::mutex> lock(threadsMu);
    exp->owner->serverThreads.fetch_sub(1);
    exp->owner->callsFinished.fetch_add(slot->calls.load(std::memory_order_relaxed));
    exp->owner->errorsFinished.fetch_add(slot->errors.load(std::memory_order_relaxed));
    slot->calls.store(0, std::memory_order_relaxed);
    slot->errors.store(0, std::memory_order_relaxed);
  }
}

Status Connection::handshake() {
  // The Hello is read first even from a client we refuse: closing a socket with unread data
  // resets it, and the client would see "peer died" instead of our reason.
  detail::Hello hello{};
  if (Status s = detail::recvMessage(sock.get(), &hello, sizeof hello, nullptr, kHelloTimeoutMs); !s.isOk()) return s;
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(sock.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return Status::fromErrno(errno, "SO_PEERCRED");
  const ServerOptions& opts = exp->owner->options;
  if (!uidAllowed(opts, cred.uid)) {
    return Status(Errc::kPermissionDenied, "uid " + std::to_string(cred.uid) + " may not import \"" + exp->name + "\"");
  }
  if (hello.magic == detail::kQueryMagic && hello.version == detail::kProtocolVersion) {
    query = true;  // run() serves it: no region, no binding
    return {};
  }
  if (hello.magic != detail::kHelloMagic || hello.version != detail::kProtocolVersion) {
    return Status(Errc::kBindingRejected, "not an lrpc client, or another protocol version");
  }
  const InterfaceDescriptor& iface = *exp->iface;
  if (hello.interfaceId != iface.id || hello.signatureHash != iface.signatureHash ||
      hello.procedureCount != iface.procedureCount) {
    hello.interfaceName[sizeof hello.interfaceName - 1] = '\0';
    return Status(Errc::kBindingRejected,
                  "interface mismatch: client has " + std::string(hello.interfaceName) + " (id " +
                      hex(hello.interfaceId) + ", signature " + hex(hello.signatureHash) + "), \"" + exp->name +
                      "\" serves " + iface.name + " (id " + hex(iface.id) + ", signature " +
                      hex(iface.signatureHash) + ")");
  }
  if (hello.mode > static_cast<uint8_t>(TransferMode::kBlock)) return Status(Errc::kBindingRejected, "unknown mode");
  mode = static_cast<TransferMode>(hello.mode);

  const RegionLayout& layout = *exp->layout;
  Result<SharedMemory> shm = SharedMemory::create(("lrpc-astacks-" + exp->name).c_str(), layout.regionBytes());
  if (!shm.isOk()) return shm.status();
  region.emplace(std::move(*shm));
  if (::getrandom(&key, sizeof key, 0) != sizeof key) return Status::fromErrno(errno, "getrandom");
  RegionHeader header{};
  header.magic = kRegionMagic;
  header.version = kRegionVersion;
  header.interfaceId = iface.id;
  header.signatureHash = iface.signatureHash;
  header.astackCount = layout.astackCount();
  header.regionBytes = layout.regionBytes();
  std::memcpy(region->data(), &header, sizeof header);
  std::lock_guard<std::mutex> lock(threadsMu);
  slots.reserve(layout.astackCount());
  for (uint32_t i = 0; i < layout.astackCount(); ++i) {
    new (control(i)) AStackControl{};
    new (region->data() + layout.returnOffset(i)) ReturnControl{};
    auto slot = std::make_unique<ServerSlot>();
    slot->index = i;
    slot->procedure = layout.procedureOf(i);
    slots.push_back(std::move(slot));
  }
  detail::Welcome w{};
  w.key = key;
  w.regionBytes = layout.regionBytes();
  return detail::sendMessage(sock.get(), &w, sizeof w, region->fd());
}

// Handles one request; false ends the binding (the client broke the protocol).
bool Connection::handle(const Message& m, OwnedFd fd) {
  if (fd.valid() || m.astack >= slots.size()) return false;
  ServerSlot* slot = slots[m.astack].get();
  Message reply{};
  reply.astack = m.astack;
  OwnedFd ignored;
  std::shared_ptr<SharedMemory> seg;
  switch (m.type) {
    case MsgType::kStartThread: {
      reply.type = MsgType::kThreadStarted;
      std::lock_guard<std::mutex> lock(threadsMu);
      if (!slot->thread.joinable()) {
        if (exp->owner->serverThreads.fetch_add(1) >= exp->owner->options.maxServerThreads) {
          exp->owner->serverThreads.fetch_sub(1);
          reply.status = static_cast<uint8_t>(Errc::kResourceExhausted);
          break;
        }
        // A fresh region's doorbell holds sequence 0 and a client's first call is 1. Starting
        // from 0 (not from whatever the word holds now) means a call rung before this thread
        // existed, by a client that did not wait for our reply, is served instead of missed.
        slot->thread = std::thread([this, slot] { serve(slot, 0); });
      }
      break;
    }
    case MsgType::kGrowArgs: {
      reply.type = MsgType::kArgSegment;
      if (m.bytes == 0 || m.bytes > exp->owner->options.maxOutOfBandBytes || m.bytes > UINT32_MAX) {
        reply.status = static_cast<uint8_t>(Errc::kResourceExhausted);
        break;
      }
      Result<SharedMemory> shm = SharedMemory::create("lrpc-args", segmentSize(m.bytes));
      if (!shm.isOk()) {
        reply.status = static_cast<uint8_t>(Errc::kResourceExhausted);
        break;
      }
      seg = std::make_shared<SharedMemory>(std::move(*shm));
      reply.bytes = seg->size();
      std::lock_guard<std::mutex> lock(slot->segMu);
      slot->argSegment = seg;
      break;
    }
    default:
      return false;
  }
  return detail::sendMessage(sock.get(), &reply, sizeof reply, seg ? seg->fd() : -1).isOk();
}

void Connection::run() {
  Status s = handshake();
  if (s.isOk() && query) {
    const Exporter* self = exp->owner->self;
    const Export* e = exp;
    detail::serveQueries(sock.get(), exp->stopFd.get(),
                         {exp->iface, [self] { return self->stats(); }, [e] { return e->bindingsLive.load(); }});
  } else if (!s.isOk()) {
    exp->owner->bindingsRejected.fetch_add(1);
    detail::logf(LogTopic::kBinding, "\"%s\": refused a binding: %s", exp->name.c_str(), s.toString().c_str());
    detail::Welcome w{};
    w.status = static_cast<uint8_t>(s.code() == Errc::kOk ? Errc::kBindingRejected : s.code());
    std::snprintf(w.detail, sizeof w.detail, "%s", s.detail().c_str());
    (void)detail::sendMessage(sock.get(), &w, sizeof w);
  } else {
    exp->owner->bindingsTotal.fetch_add(1);
    exp->owner->bindingsLive.fetch_add(1);
    exp->bindingsLive.fetch_add(1);
    detail::logf(LogTopic::kBinding, "\"%s\": bound a client (%s mode, %zu A-stacks)", exp->name.c_str(),
                 std::string(transferModeName(mode)).c_str(), slots.size());
    for (;;) {
      pollfd p[2] = {{sock.get(), POLLIN | POLLRDHUP, 0}, {exp->stopFd.get(), POLLIN, 0}};
      int r = ::poll(p, 2, -1);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0 || p[1].revents != 0) break;
      if ((p[0].revents & (POLLHUP | POLLERR | POLLRDHUP | POLLNVAL)) != 0) break;
      if ((p[0].revents & POLLIN) != 0) {
        Message m{};
        OwnedFd fd;
        if (!detail::recvMessage(sock.get(), &m, sizeof m, &fd, -1).isOk()) break;
        if (!handle(m, std::move(fd))) break;
      }
    }
    exp->owner->bindingsLive.fetch_sub(1);
    exp->bindingsLive.fetch_sub(1);
    detail::logf(LogTopic::kBinding, "\"%s\": binding ended", exp->name.c_str());
  }
  // The client is gone (or we are shutting down): no thread may touch the region after this.
  stopThreads();
  {
    std::lock_guard<std::mutex> lock(threadsMu);
    slots.clear();
  }
  region.reset();
  sock.reset();
  // Release: the acceptor that sees `finished` joins us and frees this Connection.
  finished.store(true, std::memory_order_release);
  signal(exp->reapFd.get());
}

// ---- export (acceptor) ----

void Export::reap(bool all) {
  std::list<std::unique_ptr<Connection>> done;
  {
    std::lock_guard<std::mutex> lock(connMu);
    for (auto it = conns.begin(); it != conns.end();) {
      if (all || (*it)->finished.load(std::memory_order_acquire)) {
        done.push_back(std::move(*it));
        it = conns.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& c : done) c->clerk.join();
}

void Export::accept() {
  for (;;) {
    pollfd p[3] = {{listen.get(), POLLIN, 0}, {stopFd.get(), POLLIN, 0}, {reapFd.get(), POLLIN, 0}};
    int r = ::poll(p, 3, -1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 || p[1].revents != 0) break;
    if (p[2].revents != 0) {
      uint64_t n;
      ssize_t got = ::read(reapFd.get(), &n, sizeof n);
      (void)got;
      reap(false);
    }
    if ((p[0].revents & POLLIN) == 0) continue;
    OwnedFd sock(::accept4(listen.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!sock.valid()) continue;  // EMFILE, a client that gave up, ...: keep serving the others
    // The uid is checked here, before the connection holds a binding slot: with allowUids set the
    // socket is connectable by every uid, and one that may not import must not be able to fill
    // maxBindings by connecting and never saying Hello.
    ucred cred{};
    socklen_t credLen = sizeof cred;
    if (::getsockopt(sock.get(), SOL_SOCKET, SO_PEERCRED, &cred, &credLen) != 0) continue;
    if (!uidAllowed(owner->options, cred.uid)) {
      owner->bindingsRejected.fetch_add(1);
      detail::Hello hello{};
      (void)detail::recvMessage(sock.get(), &hello, sizeof hello, nullptr, kRefuseUidReadMs);
      detail::Welcome w{};
      w.status = static_cast<uint8_t>(Errc::kPermissionDenied);
      std::snprintf(w.detail, sizeof w.detail, "uid %u may not import \"%s\"", static_cast<unsigned>(cred.uid),
                    name.c_str());
      (void)detail::sendMessage(sock.get(), &w, sizeof w);
      continue;
    }
    size_t live;
    {
      std::lock_guard<std::mutex> lock(connMu);
      live = conns.size();
    }
    if (live >= owner->options.maxBindings) {
      owner->bindingsRejected.fetch_add(1);
      // Read the Hello first (waiting briefly): closing with it unread would reset the socket
      // and the client would see "peer died" instead of the reason.
      detail::Hello hello{};
      (void)detail::recvMessage(sock.get(), &hello, sizeof hello, nullptr, kRefuseReadMs);
      detail::Welcome w{};
      w.status = static_cast<uint8_t>(Errc::kResourceExhausted);
      std::snprintf(w.detail, sizeof w.detail, "\"%s\" has too many bindings", name.c_str());
      (void)detail::sendMessage(sock.get(), &w, sizeof w);
      continue;
    }
    auto conn = std::make_unique<Connection>();
    conn->exp = this;
    conn->sock = std::move(sock);
    Connection* c = conn.get();
    std::lock_guard<std::mutex> lock(connMu);
    conns.push_back(std::move(conn));
    c->clerk = std::thread([c] { c->run(); });
  }
  reap(true);
}

// ---- exporter ----

Exporter::Exporter(ServerOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->self = this;
  impl_->options = std::move(options);
  impl_->dir = detail::namesDir(impl_->options.dir, true);
}

Exporter::~Exporter() {
  std::vector<std::unique_ptr<Export>> exports;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    exports.swap(impl_->exports);
  }
  for (auto& e : exports) signal(e->stopFd.get());
  for (auto& e : exports) {
    e->acceptor.join();
    // Remove the socket, then the lock file, while we still hold the lock: no successor's files
    // are removed, and lockName() notices a lock taken on the file we unlink.
    ::unlink(e->sockPath.c_str());
    ::unlink(detail::lockPath(*impl_->dir, e->name).c_str());
  }
}

const std::string& Exporter::dir() const noexcept {
  return impl_->dir.isOk() ? *impl_->dir : impl_->noDir;
}

Status Exporter::add(std::string_view name, const InterfaceDescriptor& iface, void* impl) {
  if (!impl_->dir.isOk()) return impl_->dir.status();
  if (Status s = detail::checkName(name); !s.isOk()) return s;
  if (iface.dispatch == nullptr || impl == nullptr) return Status(Errc::kInvalidArgument, "no dispatch or no server");
  Result<RegionLayout> layout = RegionLayout::compute(iface);
  if (!layout.isOk()) return layout.status();

  auto e = std::make_unique<Export>();
  e->owner = impl_.get();
  e->name = std::string(name);
  e->iface = &iface;
  e->impl = impl;
  e->layout.emplace(std::move(*layout));
  const std::string& dir = *impl_->dir;
  e->sockPath = detail::socketPath(dir, name);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (e->sockPath.size() >= sizeof addr.sun_path) return Status(Errc::kInvalidArgument, "socket path too long");
  std::memcpy(addr.sun_path, e->sockPath.c_str(), e->sockPath.size() + 1);

  Result<OwnedFd> lock = detail::lockName(dir, name);
  if (!lock.isOk()) return lock.status();
  e->nameLock = std::move(*lock);
  // We hold the name's lock, so any socket file left here belongs to a dead server.
  ::unlink(e->sockPath.c_str());
  e->listen.reset(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!e->listen.valid()) return Status::fromErrno(errno, "socket");
  if (::bind(e->listen.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return Status::fromErrno(errno, "bind " + e->sockPath);
  }
  ::chmod(e->sockPath.c_str(), impl_->options.allowUids.empty() ? 0600 : 0666);
  if (::listen(e->listen.get(), 128) != 0) return Status::fromErrno(errno, "listen");
  e->stopFd.reset(::eventfd(0, EFD_CLOEXEC));
  e->reapFd.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!e->stopFd.valid() || !e->reapFd.valid()) return Status::fromErrno(errno, "eventfd");
  Export* raw = e.get();
  raw->acceptor = std::thread([raw] { raw->accept(); });
  detail::logf(LogTopic::kBinding, "exporting %s as \"%s\" in %s", iface.name ? iface.name : "?", raw->name.c_str(),
               dir.c_str());
  std::lock_guard<std::mutex> guard(impl_->mu);
  impl_->exports.push_back(std::move(e));
  return {};
}

ExporterStats Exporter::stats() const {
  ExporterStats st;
  st.bindingsLive = impl_->bindingsLive.load();
  st.bindingsTotal = impl_->bindingsTotal.load();
  st.bindingsRejected = impl_->bindingsRejected.load();
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (auto& e : impl_->exports) {
    std::lock_guard<std::mutex> connLock(e->connMu);
    for (auto& c : e->conns) {
      std::lock_guard<std::mutex> threadsLock(c->threadsMu);
      for (auto& slot : c->slots) {
        st.callsServed += slot->calls.load(std::memory_order_relaxed);
        st.callErrors += slot->errors.load(std::memory_order_relaxed);
      }
    }
  }
  // Read after the live counters: a thread joined meanwhile may be counted twice, never lost.
  st.serverThreads = impl_->serverThreads.load();
  st.callsServed += impl_->callsFinished.load();
  st.callErrors += impl_->errorsFinished.load();
  return st;
}

}  // namespace lrpc
