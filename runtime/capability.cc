#include "runtime/capability.h"

#include "runtime/cap_table.h"
#include "runtime/local_binding.h"
#include "runtime/reply_releases.h"

#include <chrono>
#include <cstring>
#include <new>
#include <utility>

namespace lrpc {

const InterfaceDescriptor Capability::kDescriptor = {"Capability", 0, 0, nullptr, 0, nullptr};

std::shared_ptr<Binding> Capability::Client::nullIfRejected(std::shared_ptr<Binding> b) noexcept {
  if (b && b->channel != nullptr && b->channel->isNullCap()) return nullptr;
  return b;
}

namespace detail {
namespace {

// Calls on a capability received from a peer: tunnelled through the connection's binding.
// tunnelIn writes the tunnel's frame (the head, then the inner frame as its tail), tunnelOut
// takes the inner reply out of the tunnel's results.
template <class C>
Status tunnelIn(C& call, const detail::CapCallArgs& head, const OutMessage& request) noexcept {
  if (!call.status().isOk()) return call.status();
  std::memcpy(call.args(), &head, sizeof head);
  if (request.size() != 0) {
    Result<std::span<std::byte>> tail = call.argTail(request.size());
    if (!tail.isOk()) return tail.status();
    const OutMessage::Pieces pieces = request.pieces(0, request.size());
    size_t at = 0;
    for (uint32_t i = 0; i < pieces.count; ++i) {
      call.copyTail(tail->data() + at, pieces.at[i].data(), pieces.at[i].size());
      at += pieces.at[i].size();
    }
  }
  return {};
}

template <class C>
Status tunnelOut(C& call, MessageBuffer& reply) noexcept {
  CapCallResults r;
  std::memcpy(&r, call.results(), sizeof r);
  const std::span<const std::byte> tail = call.resultTail();
  if (!varRefOk(r.frame, tail.size(), 1)) return Status(Errc::kBadFrame, "capability call: reply frame outside the tail");
  if (Status s = reply.resizeForOverwrite(r.frame.length); !s.isOk()) return s;
  if (r.frame.length != 0) std::memcpy(reply.data(), tail.data() + r.frame.offset, r.frame.length);
  return {};
}

template <class C>
Status tunnelVia(C& call, const detail::CapCallArgs& head, const OutMessage& request, MessageBuffer& reply) noexcept {
  if (Status s = tunnelIn(call, head, request); !s.isOk()) return s;
  if (Status s = call.invoke(); !s.isOk()) return s;
  if (head.procedure == kReleaseCap || head.procedure == kAttachCallbacks) return {};
  return tunnelOut(call, reply);
}

// An asynchronous call on a received capability: the tunnel call, started on the connection's
// binding and completed later (CallChannel::startAsync).
template <class C>
class TunnelStarted final : public ChannelCall {
 public:
  TunnelStarted(const Binding& root, uint32_t procedure, const CallOptions& options, MessageBuffer& reply,
                detail::Reclaim reclaim) noexcept
      : reply_(reply) {
    call_.emplace(root, procedure, options, typename C::Async{}, reclaim);
  }
  // A call still in flight is given up: its A-stack or window slot is let go safely.
  ~TunnelStarted() override { cancel(); }
  Status start(const detail::CapCallArgs& head, const OutMessage& request) noexcept {
    if (Status s = tunnelIn(*call_, head, request); !s.isOk()) return s;
    if (Status s = call_->start(); !s.isOk()) return s;
    running_ = true;
    return {};
  }
  std::optional<Status> await(int64_t untilNs) noexcept override {
    if (!running_) return std::nullopt;
    std::optional<Status> s = call_->await(untilNs);
    if (!s) return s;
    running_ = false;
    if (!s->isOk()) return s;
    return tunnelOut(*call_, reply_);
  }
  void cancel() noexcept override {
    if (!running_) return;
    running_ = false;
    call_->cancel();
  }

 private:
  MessageBuffer& reply_;
  std::optional<C> call_;
  bool running_ = false;  // started and not yet completed or given up
};

// A release waits this long at most: a peer that is gone has dropped the object already.
constexpr std::chrono::milliseconds kReleaseTimeout{200};

Status tunnel(const Binding& root, const detail::CapCallArgs& head, const OutMessage& request, MessageBuffer& reply,
              const CallOptions& options) noexcept {
  const uint32_t p = root.iface->procedureCount - 1;
  if (root.remote) {
    RemoteCall call(root, p, options);
    return tunnelVia(call, head, request, reply);
  }
  LocalCall call(root, p, options);
  return tunnelVia(call, head, request, reply);
}

// kPeerDied once the session `imp` came in has ended: its id may name an object of a later
// session by now. Read before the call is handed to the channel, without its lock; a session
// lost while the call waits there to be sent is caught there (expectSessionOf).
Status sessionOf(const CapImport& imp) noexcept {
  if (!imp.root->remote || imp.root->channel->sessionsEnded() == imp.sessionsEnded) return {};
  return capSessionEnded();
}

// The same, checked again by the root channel when it gives the call its place.
ExpectSession expectSessionOf(const CapImport& imp) noexcept {
  return ExpectSession(imp.root->remote ? imp.root->channel : nullptr, imp.sessionsEnded);
}

class CapChannel final : public CallChannel {
 public:
  CapChannel(std::shared_ptr<Binding> root, uint32_t id) noexcept : import_{std::move(root), id} {
    if (import_.root->remote) import_.sessionsEnded = import_.root->channel->sessionsEnded();
  }

  // Tells the server it may drop the object. Best effort and bounded: a server that is gone
  // has dropped it already.
  ~CapChannel() override {
    if (!sessionOf(import_).isOk()) return;  // the object went with its session
    const Binding& root = *import_.root;
    // A handler dropping its caller's object: the release rides on the call's reply (UDP) or
    // return (same host).
    if (detail::ReplyReleases::take(root, import_.id)) return;
    if (!root.remote && root.local->guestWaits()) {
      // A callback dropped while serving a call whose caller waits: that caller runs the
      // release before its call returns (runtime/callbacks.h), so nobody waits for it here,
      // a round trip saved.
      CallOptions options;
      options.timeout = kReleaseTimeout;
      const detail::CapCallArgs head{{0, 0}, import_.id, kReleaseCap, 0};
      LocalCall call(root, root.iface->procedureCount - 1, options, LocalCall::Async{}, {});
      if (!tunnelIn(call, head, OutMessage(std::span<const std::byte>())).isOk() || !call.start().isOk()) return;
      // Looked at again after the release was rung (ringReverse fences): if the caller still
      // waits, its last look at its callbacks sees the release. The A-stack then stays out of
      // the pool until the release has run.
      if (root.local->guestWaits()) {
        call.cancel();
        return;
      }
      // It stopped waiting meanwhile: as below, the release is done when we return.
      while (!call.await(detail::monotonicNs() + 1'000'000)) {
      }
      return;
    }
    const ExpectSession expect = expectSessionOf(import_);  // a release must not reach a new session
    detail::releaseByRoundTrip(root, import_.id);
  }

  Status call(const InterfaceDescriptor& iface, uint32_t procedure, const OutMessage& request, MessageBuffer& reply,
              const CallOptions& options) noexcept override {
    if (Status s = sessionOf(import_); !s.isOk()) return s;
    if (request.size() > UINT32_MAX) return Status(Errc::kInvalidArgument, "argument frame too large");
    const detail::CapCallArgs head{{0, static_cast<uint32_t>(request.size())}, import_.id, procedure, iface.id};
    const ExpectSession expect = expectSessionOf(import_);
    return tunnel(*import_.root, head, request, reply, options);
  }
  Result<std::unique_ptr<ChannelCall>> startAsync(const InterfaceDescriptor& iface, uint32_t procedure,
                                                  const OutMessage& request, MessageBuffer& reply,
                                                  const CallOptions& options, detail::Reclaim reclaim) noexcept override {
    if (Status s = sessionOf(import_); !s.isOk()) return s;
    if (request.size() > UINT32_MAX) return Status(Errc::kInvalidArgument, "argument frame too large");
    const detail::CapCallArgs head{{0, static_cast<uint32_t>(request.size())}, import_.id, procedure, iface.id};
    const ExpectSession expect = expectSessionOf(import_);
    const Binding& root = *import_.root;
    const uint32_t tunnelProcedure = root.iface->procedureCount - 1;
    return root.remote ? start<RemoteCall>(root, tunnelProcedure, head, request, reply, options, reclaim)
                       : start<LocalCall>(root, tunnelProcedure, head, request, reply, options, reclaim);
  }
  const CapImport* importedCap() const noexcept override { return &import_; }

 private:
  template <class C>
  static Result<std::unique_ptr<ChannelCall>> start(const Binding& root, uint32_t tunnelProcedure,
                                                    const detail::CapCallArgs& head, const OutMessage& request,
                                                    MessageBuffer& reply, const CallOptions& options,
                                                    detail::Reclaim reclaim) noexcept {
    std::unique_ptr<TunnelStarted<C>> call(
        new (std::nothrow) TunnelStarted<C>(root, tunnelProcedure, options, reply, reclaim));
    if (!call) return Status(Errc::kResourceExhausted, "out of memory for an asynchronous call");
    if (Status s = call->start(head, request); !s.isOk()) return s;
    return std::unique_ptr<ChannelCall>(std::move(call));
  }

  CapImport import_;
};

// Whether every fixed argument part of `iface` fits the inline tail of `root`'s tunnel, where a
// same-host call on a capability writes it (LocalCall); one that does not calls through its
// CapChannel, which builds the frame apart first.
bool fitsTunnel(const LocalBinding& root, const InterfaceDescriptor& iface) noexcept {
  if (root.procedureCount() == 0) return false;
  const uint32_t room = root.layout().procedure(root.procedureCount() - 1).tailRoom;
  for (uint32_t p = 0; p < iface.procedureCount; ++p) {
    if (iface.procedures[p].argsSize > room) return false;
  }
  return true;
}

// A received capability's binding and the channel that releases it, made together: a callback
// imports one per call that passes it, so one allocation instead of two. The binding is
// destroyed first, then the channel, whose destructor releases the object.
struct ImportedBinding {
  ImportedBinding(std::shared_ptr<Binding> root, uint32_t id, const InterfaceDescriptor& iface, LocalBinding* sameHost)
      : channel(std::move(root), id),
        // On the same host its calls go straight onto the root's A-stacks (LocalCall); the
        // channel then only releases it.
        binding(sameHost != nullptr ? Binding(iface, sameHost, &channel, id, nullptr) : Binding(iface, &channel, nullptr)) {}
  CapChannel channel;
  Binding binding;
};

// The Client's binding for capability `id` of the peer that `root` reaches. May throw bad_alloc.
// Shares ImportedBinding's ownership (so weak_from_this() of it is empty: only a connection's
// own binding is asked for that, by capFromFrame).
std::shared_ptr<Binding> bindingOfImport(std::shared_ptr<Binding> root, uint32_t id, const InterfaceDescriptor& iface) {
  if (root->remote && root->channel != nullptr) root->channel->keepAlive();
  LocalBinding* sameHost = root->remote || !fitsTunnel(*root->local, iface) ? nullptr : root->local;
  auto both = std::make_shared<ImportedBinding>(std::move(root), id, iface, sameHost);
  return std::shared_ptr<Binding>(both, &both->binding);
}

// The binding whose connection a call through `via` uses: `via` itself, or, for a received
// capability, the binding it was received through.
const Binding& connectionOf(const Binding& via) noexcept {
  if (via.channel != nullptr) {
    if (const CapImport* imp = via.channel->importedCap()) return *imp->root;
  }
  return via;
}

}  // namespace

namespace {

// Whether `cap` names an object of neither this connection (`conn`) nor this process: an
// imported binding, or a capability received through another binding. Passed on, it becomes
// a proxy (proxyOf).
bool foreign(const Binding& conn, const std::shared_ptr<Binding>& cap) noexcept {
  if (!cap || cap->channel == nullptr) return cap != nullptr;
  if (cap->channel->isNullCap() || cap->channel->hostedObject() != nullptr) return false;
  const CapImport* imp = cap->channel->importedCap();
  return imp == nullptr || imp->root.get() != &conn;
}

// An object of this process that forwards every call to `cap`, through the binding it came on.
Result<HostedObject> proxyOf(const std::shared_ptr<Binding>& cap) noexcept {
  if (cap->iface == &Capability::kDescriptor) {
    return Status(Errc::kUnsupported,
                  "a Capability received untyped cannot be passed on to another peer: castAs its interface first");
  }
  if (cap->iface->forward == nullptr) {
    return Status(Errc::kUnsupported, {"capability of ", cap->iface->name,
                                       " cannot be passed on: its stubs were generated without forwarding"});
  }
  try {
    return HostedObject{cap->iface, cap->iface->forward(cap)};
  } catch (const std::bad_alloc&) {
    return Status(Errc::kResourceExhausted, "proxy allocation failed");
  }
}

// The object this process serves for `cap` when it travels through `conn`: its own (made with
// Client::serve), a proxy (foreign: kept in `proxy`), or none (null, or imported from `conn`).
Result<const HostedObject*> servedFor(const Binding& conn, const std::shared_ptr<Binding>& cap,
                                      Result<HostedObject>& proxy) noexcept {
  if (cap && cap->channel != nullptr && cap->channel->hostedObject() != nullptr) return cap->channel->hostedObject();
  if (!foreign(conn, cap)) return static_cast<const HostedObject*>(nullptr);
  proxy = proxyOf(cap);
  if (!proxy.isOk()) return proxy.status();
  return &*proxy;
}

// The id of `cap` in a frame of a call through `via`; `hosted`: servedFor's object.
Result<uint32_t> idInFrame(const Binding& via, const std::shared_ptr<Binding>& cap, const HostedObject* hosted,
                           bool proxy) noexcept {
  if (!cap || (cap->channel != nullptr && cap->channel->isNullCap())) return kNullCap;
  const Binding& conn = connectionOf(via);
  if (hosted == nullptr && cap->channel != nullptr) {
    if (const CapImport* imp = cap->channel->importedCap(); imp != nullptr && imp->root.get() == &conn) {
      if (Status s = sessionOf(*imp); !s.isOk()) return s;
      return imp->id;
    }
  }
  if (hosted == nullptr) return Status(Errc::kInvalidArgument, "capability names no object to pass");
  if (!conn.remote) return conn.local->exportCallback(*hosted, CapTable::kDefaultLimit);
  if (conn.channel->hostedObject() == nullptr) {
    Result<uint32_t> id = conn.channel->exportCallback(conn, *hosted);
    if (id.isOk() || id.status().code() != Errc::kUnsupported) return id;
    return Status(Errc::kUnsupported, {proxy ? "passing on a capability of another binding (a proxy, which this "
                                               "process would serve as a callback): "
                                             : "passing an object this process serves (a callback): ",
                                       id.status().detail()});
  }
  // An in-process object: ClientCaps puts it in that object's table for the call.
  return Status(Errc::kInvalidArgument, "an object for an in-process call goes through ClientCaps");
}

}  // namespace

Result<std::shared_ptr<Binding>> capFromFrame(const Binding& via, uint32_t id, const InterfaceDescriptor& iface) noexcept {
  if (id == kNullCap) return std::shared_ptr<Binding>();
  const Binding& conn = connectionOf(via);
  try {
    if ((id & kClientHostedCap) != 0) {
      // One of our own callbacks, passed back.
      Result<HostedObject> object =
          conn.remote ? conn.channel->findCallback(id & ~kClientHostedCap, iface.id) : conn.local->findCallback(id, iface.id);
      if (!object.isOk()) return object.status();
      return serveInProcess(std::move(*object));
    }
    std::shared_ptr<Binding> root = std::const_pointer_cast<Binding>(conn.weak_from_this().lock());
    if (!root) return Status(Errc::kInvalidArgument, "capability received through a binding not owned by a shared_ptr");
    if (!root->iface->carriesCaps) return Status(Errc::kBadFrame, "capability received through a binding that carries none");
    return bindingOfImport(std::move(root), id, iface);
  } catch (const std::bad_alloc&) {
    return Status(Errc::kResourceExhausted, "capability allocation failed");
  }
}

ClientCaps::~ClientCaps() {
  for (uint32_t id : added_) (void)inProcess_->release(id);
}

uint32_t ClientCaps::out(const std::shared_ptr<Binding>& cap) noexcept {
  Result<uint32_t> id = toFrame(cap);
  if (id.isOk()) return *id;
  if (error.isOk()) error = id.status();
  return kNullCap;
}

Result<uint32_t> ClientCaps::toFrame(const std::shared_ptr<Binding>& cap) noexcept {
  const Binding& conn = connectionOf(via_);
  Result<HostedObject> proxy = Status(Errc::kNotFound);  // no detail: no allocation on every pass
  Result<const HostedObject*> served = servedFor(conn, cap, proxy);
  if (!served.isOk()) return served.status();
  const HostedObject* ours = *served;
  if (ours != nullptr && conn.remote && conn.channel->hostedObject() != nullptr) {
    // A call on an object in this process: our object goes into its table for the call.
    CapTable* table = conn.channel->exportTable();
    try {
      added_.reserve(added_.size() + 1);
    } catch (const std::bad_alloc&) {
      return Status(Errc::kResourceExhausted, "capability allocation failed");
    }
    Result<uint32_t> id = table->add(*ours);
    if (!id.isOk()) return id;
    inProcess_ = table;
    added_.push_back(*id);
    return id;
  }
  Result<uint32_t> id = idInFrame(via_, cap, ours, proxy.isOk());
  if (ours != nullptr && id.isOk() && (*id & kClientHostedCap) != 0) {
    if (sentFirst_.first == kNullCap) {
      sentFirst_ = {*id, *ours};
    } else {
      try {
        sentMore_.emplace_back(*id, *ours);
      } catch (const std::bad_alloc&) {
        // Only a returned copy of this object would then be unknown: a kBadFrame, not a wrong call.
      }
    }
  }
  return id;
}

Result<std::shared_ptr<Binding>> ClientCaps::in(uint32_t id, const InterfaceDescriptor& iface) noexcept {
  if ((id & kClientHostedCap) != 0) {
    const std::pair<uint32_t, HostedObject>* match = sentFirst_.first == id ? &sentFirst_ : nullptr;
    for (size_t i = 0; match == nullptr && i < sentMore_.size(); ++i) {
      if (sentMore_[i].first == id) match = &sentMore_[i];
    }
    if (match != nullptr) {
      const HostedObject& object = match->second;
      if (!heldAs(*object.iface, iface.id)) {
        return Status(Errc::kBadFrame, "the server returned our object as another interface");
      }
      try {
        return serveInProcess(object);
      } catch (const std::bad_alloc&) {
        return Status(Errc::kResourceExhausted, "capability allocation failed");
      }
    }
  }
  return capFromFrame(via_, id, iface);
}

std::shared_ptr<Binding> castBinding(const std::shared_ptr<Binding>& any, const InterfaceDescriptor& iface) {
  if (any->iface == &iface || isA(*any->iface, iface.id) || any->iface != &Capability::kDescriptor) return any;
  // Received untyped (bindingOfImport): the same channel, now calling as `iface`; its owner
  // checks that on every call. The untyped binding, kept as the owner, holds the channel.
  CallChannel* channel = any->channel;
  if (!any->remote && fitsTunnel(*any->local, iface)) {
    return std::make_shared<Binding>(iface, any->local, channel, any->capId, std::shared_ptr<void>(any));
  }
  return std::make_shared<Binding>(iface, channel, std::shared_ptr<void>(any));
}

Result<std::shared_ptr<Binding>> capArg(ServerCall& call, uint32_t id, const InterfaceDescriptor& iface) noexcept {
  if (id == kNullCap) return std::shared_ptr<Binding>();
  try {
    if ((id & kClientHostedCap) != 0) {
      // An object the client serves: calls on it go back over its callback binding.
      std::shared_ptr<Binding> callbacks = call.peerCallbacks();
      if (!callbacks) return Status(Errc::kBadFrame, "a callback id from a client that has passed no callbacks");
      return bindingOfImport(std::move(callbacks), id & ~kClientHostedCap, iface);
    }
    CapTable* table = call.capTable();
    if (table == nullptr) return Status(Errc::kUnsupported, "this path does not carry capabilities");
    Result<HostedObject> object = table->find(id, iface.id);
    if (!object.isOk()) return object.status();
    return serveInProcess(std::move(*object));
  } catch (const std::bad_alloc&) {
    return Status(Errc::kResourceExhausted, "capability allocation failed");
  }
}

Result<uint32_t> capResult(ServerCall& call, const std::shared_ptr<Binding>& cap) noexcept {
  if (!cap || (cap->channel != nullptr && cap->channel->isNullCap())) return kNullCap;
  const HostedObject* hosted = cap->channel != nullptr ? cap->channel->hostedObject() : nullptr;
  Result<HostedObject> proxy = Status(Errc::kNotFound);  // no detail: no allocation on every pass
  if (hosted == nullptr) {
    // One of the client's own callbacks goes back as its id there.
    const CapImport* imp = cap->channel != nullptr ? cap->channel->importedCap() : nullptr;
    if (imp != nullptr && imp->root != nullptr && imp->root == call.peerCallbacks()) return imp->id | kClientHostedCap;
    // Any other: an object of this process that forwards to it.
    proxy = proxyOf(cap);
    if (!proxy.isOk()) return proxy.status();
    hosted = &*proxy;
  }
  CapTable* table = call.capTable();
  if (table == nullptr) return Status(Errc::kUnsupported, "this path does not carry capabilities");
  return table->add(*hosted);
}

void releaseByRoundTrip(const Binding& root, uint32_t id) noexcept {
  CallOptions options;
  options.timeout = kReleaseTimeout;
  MessageBuffer none;
  const CapCallArgs head{{0, 0}, id, kReleaseCap, 0};
  (void)tunnel(root, head, OutMessage(std::span<const std::byte>()), none, options);
}

namespace {
thread_local ExpectSession* tlsExpectSession = nullptr;
}  // namespace

ExpectSession::ExpectSession(const CallChannel* channel, uint32_t sessionsEnded) noexcept
    : channel_(channel), sessionsEnded_(sessionsEnded), outer_(tlsExpectSession) {
  tlsExpectSession = this;
}

ExpectSession::~ExpectSession() { tlsExpectSession = outer_; }

std::optional<uint32_t> takeExpectedSession(const CallChannel* channel) noexcept {
  ExpectSession* e = tlsExpectSession;
  if (e == nullptr || e->taken_ || e->channel_ != channel) return std::nullopt;
  e->taken_ = true;
  return e->sessionsEnded_;
}

Status capSessionEnded() noexcept {
  return Status(Errc::kPeerDied, "the session that gave this capability ended (the server restarted or dropped it)");
}

Status attachCallbacks(const Binding& conn, std::span<const std::byte> where, const CallOptions& options) noexcept {
  if (!conn.iface->carriesCaps) return Status(Errc::kUnsupported, "this binding carries no capabilities");
  MessageBuffer none;
  const CapCallArgs head{{0, static_cast<uint32_t>(where.size())}, kNullCap, kAttachCallbacks, 0};
  return tunnel(conn, head, OutMessage(where), none, options);
}

}  // namespace detail

Result<uint32_t> CallChannel::exportCallback(const Binding&, const HostedObject&) noexcept {
  return Status(Errc::kUnsupported, "this channel carries no objects of its client's");
}

Result<HostedObject> CallChannel::findCallback(uint32_t, uint64_t) const noexcept {
  return Status(Errc::kBadFrame, "the server returned a capability id the client hosts, and this channel carries none");
}

Status ServerCall::attachCallbacks(std::span<const std::byte>) noexcept {
  return Status(Errc::kUnsupported, "this path does not call its clients back through an address");
}

}  // namespace lrpc
