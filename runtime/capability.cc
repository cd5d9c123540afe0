#include "runtime/capability.h"

#include "runtime/cap_import.h"
#include "runtime/cap_table.h"
#include "runtime/local_binding.h"

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
