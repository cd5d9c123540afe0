// The clerk of one binding: checks the client's credentials and interface, makes the
// binding's A-stack region and passes it over the socket, starts server threads and grows
// out-of-band segments on request, and ends the binding when the client goes away.
#include "runtime/exporter_parts.h"

#include <poll.h>
#include <sched.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <utility>

#include "runtime/base/log.h"
#include "runtime/callbacks.h"
#include "runtime/import.h"
#include "runtime/introspect.h"

namespace lrpc {

using namespace exporter;  // NOLINT: this file implements the exporter's parts

void Connection::stopThreads() {
  // Taken out under the lock and joined after it: a serving thread may take threadsMu
  // (runsOn), and joining it while we held it would wait forever.
  std::vector<std::pair<ServerSlot*, std::thread>> running;
  {
    MutexLock lock(threadsMu);
    for (auto& slot : slots) {
      std::thread& t = slot->thread.get(threadsMu);
      if (t.joinable()) running.emplace_back(slot.get(), std::move(t));
    }
  }
  // Every A-stack first, then the joins: after hand-overs (Connection::help) a thread may
  // serve another A-stack than the one it was started for.
  for (auto& [slot, t] : running) {
    // Release: pairs with the acquire of `stop` in waitForCall after it sees the word change.
    slot->stop.store(true, std::memory_order_release);
    detail::stopWaiter(control(slot->index)->callWord);
  }
  for (auto& [slot, t] : running) {
    t.join();
    MutexLock lock(threadsMu);
    slot->threadId.get(threadsMu) = {};
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
  const ExporterOptions& opts = exp->owner->options;
  if (!uidAllowed(opts, cred.uid)) {
    return Status(Errc::kPermissionDenied, "uid " + std::to_string(cred.uid) + " may not import \"" + exp->name + "\"");
  }
  // A callback host (runtime/callbacks.h) has no Exporter to report on.
  if (hello.magic == detail::kQueryMagic && hello.version == kVersion && exp->owner->self != nullptr) {
    query = true;  // run() serves it: no region, no binding
    return {};
  }
  if (hello.magic != detail::kHelloMagic || hello.version != kVersion) {
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
  header.version = kVersion;
  header.interfaceId = iface.id;
  header.signatureHash = iface.signatureHash;
  header.astackCount = layout.astackCount();
  header.regionBytes = layout.regionBytes();
  std::memcpy(region->data(), &header, sizeof header);
  MutexLock lock(threadsMu);
  slots.reserve(layout.astackCount());
  startedSlots = std::make_unique<std::atomic<ServerSlot*>[]>(layout.astackCount());
  for (uint32_t i = 0; i < layout.astackCount(); ++i) {
    new (control(i)) AStackControl{};
    new (region->data() + layout.returnOffset(i)) ReturnControl{};
    auto slot = std::make_unique<ServerSlot>();
    slot->index = i;
    slot->procedure = layout.procedureOf(i);
    slot->ctl = control(i);
    slot->ret = reinterpret_cast<ReturnControl*>(region->data() + layout.returnOffset(i));
    slot->pl = &layout.procedure(slot->procedure);
    const uint32_t argEnd = kControlBytes + slot->pl->argTailOff;
    slot->argLinesEnd = slot->pl->tailRoom != 0 || argEnd > kCacheLine ? argEnd : 0;
    slots.push_back(std::move(slot));
  }
  // Before the Welcome: a callback binding's first call may come right after it, and its
  // caller, waiting, runs it (a guest) only once this is set.
  // Release: a guest that sees it (enterGuest) sees the region and slots made above.
  guestReady.store(true, std::memory_order_release);
  detail::Welcome w{};
  w.key = key;
  w.regionBytes = layout.regionBytes();
  return detail::sendMessage(sock.get(), &w, sizeof w, region->fd());
}

bool Connection::runsOn(std::thread::id id) const {
  if (clerk.get_id() == id) return true;
  MutexLock lock(threadsMu);
  for (const auto& slot : slots) {
    if (slot->threadId.get(threadsMu) == id) return true;
  }
  return false;
}

std::shared_ptr<Binding> Connection::callbackBinding() const {
  // Acquire: pairs with the clerk's release once `callbacks` was set; from then until the
  // threads that call this are gone, it stays as it is (see its declaration).
  if (!callbacksReady.load(std::memory_order_acquire)) return nullptr;
  return callbacks;
}

// The client hands us a socket to import its callback binding over (runtime/callbacks.h).
bool Connection::importCallbacks(OwnedFd fd) {
  Message reply{MsgType::kCallbacksReady, detail::kBindingWide, 0, 0, {}};
  int type = 0;
  socklen_t typeLen = sizeof type;
  if (callbackBinding() != nullptr) {
    reply.status = static_cast<uint8_t>(Errc::kAlreadyExists);
  } else if (::getsockopt(fd.get(), SOL_SOCKET, SO_TYPE, &type, &typeLen) != 0 || type != SOCK_SEQPACKET) {
    reply.status = static_cast<uint8_t>(Errc::kBindingRejected);  // not what a callback host hands over
  } else {
    ImportOptions options;
    options.mode = mode;
    Result<std::shared_ptr<Binding>> b =
        detail::importOverSocket(std::move(fd), exp->name + " (callbacks)", detail::kCallbackInterface, options);
    if (b.isOk()) {
      // Its calls say which of our calls they serve, so that the caller waiting for that call
      // may run them (runtime/callbacks.h).
      (*b)->local->markReverse(this);
      // Relaxed: read by our server threads only to name a callback's origin, a hint.
      hasCallbacks.store(true, std::memory_order_relaxed);
      MutexLock lock(callbacksMu);
      callbacks = std::move(*b);
      // Release: a server thread that sees it ready sees the binding set above.
      callbacksReady.store(true, std::memory_order_release);
    } else {
      detail::logf(LogTopic::kBinding, "\"%s\": client's callbacks refused: %s", exp->name.c_str(),
                   b.status().toString().c_str());
      reply.status = static_cast<uint8_t>(b.status().code());
    }
  }
  return detail::sendMessage(sock.get(), &reply, sizeof reply).isOk();
}

// Handles one request; false ends the binding (the client broke the protocol).
bool Connection::handle(const Message& m, OwnedFd fd) {
  if (m.type == MsgType::kCallbacks && m.astack == detail::kBindingWide && fd.valid()) {
    return importCallbacks(std::move(fd));
  }
  if (fd.valid() || m.astack >= made().size()) return false;
  ServerSlot* slot = made()[m.astack].get();
  Message reply{};
  reply.astack = m.astack;
  OwnedFd ignored;
  std::shared_ptr<SharedMemory> seg;
  switch (m.type) {
    case MsgType::kStartThread: {
      reply.type = MsgType::kThreadStarted;
      MutexLock lock(threadsMu);
      std::thread& thread = slot->thread.get(threadsMu);
      if (!thread.joinable()) {
        if (exp->owner->serverThreads.fetch_add(1) >= exp->owner->options.maxServerThreads) {
          exp->owner->serverThreads.fetch_sub(1);
          reply.status = static_cast<uint8_t>(Errc::kResourceExhausted);
          break;
        }
        // A fresh region's doorbell holds sequence 0 and a client's first call is 1. Starting
        // from 0 (not from whatever the word holds now) means a call rung before this thread
        // existed, by a client that did not wait for our reply, is served instead of missed.
        // Only this clerk, under threadsMu, adds to the list: one entry per A-stack at most.
        const uint32_t n = threadsStarted.load(std::memory_order_relaxed);
        startedSlots[n].store(slot, std::memory_order_relaxed);
        // Release: a helper or guest that reads the new count (started()) finds the entry, and
        // sees `served` as it is now (0). Only then do its doorbell's calls count as real.
        threadsStarted.store(n + 1, std::memory_order_release);
        thread = std::thread([this, slot] { serve(slot, 0); });
        slot->threadId.get(threadsMu) = thread.get_id();
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
      MutexLock lock(slot->segMu);
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
                 std::string(transferModeName(mode)).c_str(), made().size());
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
  {
    // Deferred replies still held somewhere find the binding gone from here on.
    MutexLock lock(live->mu);
    live->alive = false;
  }
  // A callback binding's guests (threads of our own process running callbacks their calls
  // caused) finish the call they run first: they see guestsClosed and enter no more. They
  // wait for a forward call, whose server is gone or going, so they leave soon.
  // Seq_cst: see enterGuest.
  guestsClosed.store(true, std::memory_order_seq_cst);
  // Seq_cst (acquire at least: pairs with leaveGuest's release; after it nothing they did
  // touches the region).
  while (guests.load(std::memory_order_seq_cst) != 0) ::sched_yield();
  stopThreads();
  // Its objects go now, not when the acceptor reaps us: they may hold the client's callbacks,
  // which we drop too (the client's callback host then sees us leave and drops ours).
  if (caps) caps->close();
  {
    MutexLock lock(callbacksMu);
    // Relaxed: every thread that read it without the lock is gone (joined, or no guest left).
    callbacksReady.store(false, std::memory_order_relaxed);
    callbacks.reset();
  }
  {
    MutexLock lock(threadsMu);
    slots.clear();
  }
  region.reset();
  sock.reset();
  // Release: the acceptor that sees `finished` joins us and frees this Connection.
  finished.store(true, std::memory_order_release);
  signal(exp->reapFd.get());
}

}  // namespace lrpc
