// Calls on a capability received from a peer (runtime/cap_import.h): the tunnel through the
// connection's binding, the channel that holds and releases an imported object, and the
// binding a received capability gets.
#include "runtime/cap_import.h"

#include <cstring>
#include <new>
#include <optional>
#include <utility>

#include "runtime/local_binding.h"
#include "runtime/reply_releases.h"

namespace lrpc::detail {
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

}  // namespace

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

// Read before the call is handed to the channel, without its lock; a session lost while the
// call waits there to be sent is caught there (expectSessionOf).
Status sessionOf(const CapImport& imp) noexcept {
  if (!imp.root->remote || imp.root->channel->sessionsEnded() == imp.sessionsEnded) return {};
  return capSessionEnded();
}

// An interface that does not fit calls through its CapChannel, which builds the frame apart first.
bool fitsTunnel(const LocalBinding& root, const InterfaceDescriptor& iface) noexcept {
  if (root.procedureCount() == 0) return false;
  const uint32_t room = root.layout().procedure(root.procedureCount() - 1).tailRoom;
  for (uint32_t p = 0; p < iface.procedureCount; ++p) {
    if (iface.procedures[p].argsSize > room) return false;
  }
  return true;
}

const Binding& connectionOf(const Binding& via) noexcept {
  if (via.channel != nullptr) {
    if (const CapImport* imp = via.channel->importedCap()) return *imp->root;
  }
  return via;
}

namespace {

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

}  // namespace

// Shares ImportedBinding's ownership (so weak_from_this() of it is empty: only a connection's
// own binding is asked for that, by capFromFrame).
std::shared_ptr<Binding> bindingOfImport(std::shared_ptr<Binding> root, uint32_t id, const InterfaceDescriptor& iface) {
  if (root->remote && root->channel != nullptr) root->channel->keepAlive();
  LocalBinding* sameHost = root->remote || !fitsTunnel(*root->local, iface) ? nullptr : root->local;
  auto both = std::make_shared<ImportedBinding>(std::move(root), id, iface, sameHost);
  return std::shared_ptr<Binding>(both, &both->binding);
}

}  // namespace lrpc::detail
