// The server side of a frame run in this process: calls on an object served in process
// (Foo::Client::serve), over a private copy of the frame, and calls on a capability that arrive
// through the capability tunnel (serveCapCall), over the inner frame where the tunnel's tail
// holds it. Both may be deferred (runtime/pending.h).
#include <chrono>
#include <cstring>
#include <new>
#include <utility>

#include "runtime/base/bulk_copy.h"
#include "runtime/base/mutex.h"
#include "runtime/cap_table.h"
#include "runtime/capability.h"

namespace lrpc::detail {
namespace {

// Where an in-process caller waits for the answer to a deferred call. The answer is joined
// into the caller's reply buffer while the caller waits, and only then.
class InProcessAnswer {
 public:
  explicit InProcessAnswer(MessageBuffer& reply) noexcept : reply_(&reply) {}

  // Waits for the answer (at most `timeout`, when not zero); afterwards nothing more is
  // written to the reply buffer.
  Status wait(std::chrono::nanoseconds timeout) noexcept {
    MutexLock lock(mu_);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!answered_) {
      if (timeout.count() == 0) {
        changed_.wait(mu_);
        continue;
      }
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) {
        reply_ = nullptr;
        return Status(Errc::kDeadlineExceeded, "the deferred reply did not come within the call's deadline");
      }
      changed_.waitFor(mu_, deadline - now);
    }
    reply_ = nullptr;
    return status_;
  }
  // Runs `answer(reply)` if the caller still waits, and wakes it.
  template <class F>
  void give(F answer) noexcept {
    MutexLock lock(mu_);
    if (reply_ == nullptr || answered_) return;
    status_ = answer(*reply_);
    answered_ = true;
    changed_.notifyAll();
  }
  bool gaveUp() const noexcept {
    MutexLock lock(mu_);
    return reply_ == nullptr;
  }

 private:
  mutable Mutex mu_;
  CondVar changed_;
  MessageBuffer* reply_ LRPC_GUARDED_BY(mu_);  // the caller's, while it waits
  bool answered_ LRPC_GUARDED_BY(mu_) = false;
  Status status_ LRPC_GUARDED_BY(mu_);
};

// A ServerCall over a private copy of a frame: results and tail kept apart, so that reserving
// the tail never moves results(), and joined into one reply at the end.
class FrameServerCall final : public ServerCall {
 public:
  FrameServerCall(std::span<const std::byte> args, std::span<const std::byte> tail, MessageBuffer& results,
                  CapTable* table, ServerCall* outer, const ProcedureDescriptor* procedure = nullptr,
                  MessageBuffer* reply = nullptr, std::shared_ptr<InProcessAnswer>* answer = nullptr) noexcept
      : ServerCall(args, tail, results.data()),
        table_(table),
        outer_(outer),
        procedure_(procedure),
        reply_(reply),
        answer_(answer) {}

  Result<std::span<std::byte>> resultTail(size_t n) noexcept override {
    if (reserved_) return Status(Errc::kInvalidArgument, "resultTail reserved twice");
    if (n > UINT32_MAX) return Status(Errc::kResourceExhausted, "result tail too large");
    if (Status s = tail_.resizeForOverwrite(n); !s.isOk()) return s;
    reserved_ = true;
    return tail_.span();
  }
  bool argTailPrivate() const noexcept override { return true; }
  CapTable* capTable() noexcept override { return table_; }
  std::shared_ptr<Binding> peerCallbacks() noexcept override { return outer_ ? outer_->peerCallbacks() : nullptr; }
  bool cancelled() const noexcept override { return outer_ != nullptr && outer_->cancelled(); }

  Result<std::unique_ptr<DeferredCall>> defer() noexcept override;

  const MessageBuffer& tail() const noexcept { return tail_; }

 private:
  CapTable* table_;
  ServerCall* outer_;  // the call that tunnelled this one, if any
  const ProcedureDescriptor* procedure_;      // what defer() needs to write results later
  MessageBuffer* reply_;                      // an in-process caller's reply buffer
  std::shared_ptr<InProcessAnswer>* answer_;  // where that caller waits for a deferred answer
  MessageBuffer tail_;
  bool reserved_ = false;
};

// The reply of a frame call: its results, then its tail.
Status joinReply(const FrameServerCall& call, const ProcedureDescriptor& d, const MessageBuffer& results,
                 MessageBuffer& reply) noexcept {
  const size_t tail = call.tail().size();
  if (Status s = reply.resizeForOverwrite(d.resultsSize + tail); !s.isOk()) return s;
  if (d.resultsSize != 0) std::memcpy(reply.data(), results.data(), d.resultsSize);
  if (tail != 0) detail::bulkCopy(reply.data() + d.resultsSize, call.tail().data(), tail);
  return {};
}

// The tunnel's own results: the inner call's reply, as their tail.
Status writeTunnelResults(ServerCall& call, const MessageBuffer& reply) noexcept {
  Result<std::span<std::byte>> out = call.resultTail(reply.size());
  if (!out.isOk()) return out.status();
  detail::bulkCopy(out->data(), reply.data(), reply.size());
  const CapCallResults r{{0, static_cast<uint32_t>(reply.size())}};
  std::memcpy(call.results(), &r, sizeof r);
  return {};
}

// A frame call answered later: through the deferred call that tunnelled it, or to the
// in-process caller that waits for it.
class FrameDeferred final : public DeferredCall {
 public:
  FrameDeferred(const ProcedureDescriptor& d, std::unique_ptr<DeferredCall> outer) noexcept
      : d_(d), outer_(std::move(outer)) {}
  FrameDeferred(const ProcedureDescriptor& d, std::shared_ptr<InProcessAnswer> waiter, CapTable* table) noexcept
      : d_(d), waiter_(std::move(waiter)), table_(table) {}

  void finish(Status status, Writer write, void* value) noexcept override {
    Answer answer{this, write, value};
    if (outer_) {
      const bool ok = status.isOk();
      outer_->finish(std::move(status), ok ? &Answer::throughTunnel : nullptr, &answer);
      return;
    }
    // The table is the caller's channel's, alive while the caller waits (give() checks).
    waiter_->give([&](MessageBuffer& reply) -> Status {
      if (!status.isOk()) return status;
      return answer.into(table_, nullptr, reply);
    });
  }
  bool cancelled() const noexcept override { return outer_ ? outer_->cancelled() : waiter_->gaveUp(); }

 private:
  struct Answer {
    FrameDeferred* self;
    Writer write;
    void* value;
    // The results, written by the generated writer, joined into one reply.
    Status into(CapTable* table, ServerCall* outer, MessageBuffer& reply) const noexcept {
      MessageBuffer results;
      if (Status s = results.resizeForOverwrite(self->d_.resultsSize); !s.isOk()) return s;
      FrameServerCall call({}, {}, results, table, outer);
      if (write != nullptr) {
        if (Status s = write(call, value); !s.isOk()) return s;
      }
      return joinReply(call, self->d_, results, reply);
    }
    static Status throughTunnel(ServerCall& tunnel, void* p) noexcept {
      MessageBuffer reply;
      if (Status s = static_cast<Answer*>(p)->into(tunnel.capTable(), &tunnel, reply); !s.isOk()) return s;
      return writeTunnelResults(tunnel, reply);
    }
  };

  const ProcedureDescriptor& d_;
  std::unique_ptr<DeferredCall> outer_;
  std::shared_ptr<InProcessAnswer> waiter_;
  CapTable* table_ = nullptr;
};

Result<std::unique_ptr<DeferredCall>> FrameServerCall::defer() noexcept {
  if (procedure_ == nullptr) return ServerCall::defer();
  std::unique_ptr<DeferredCall> d;
  if (answer_ != nullptr && reply_ != nullptr) {
    try {
      *answer_ = std::make_shared<InProcessAnswer>(*reply_);
    } catch (const std::bad_alloc&) {
      return Status(Errc::kResourceExhausted, "out of memory deferring a reply");
    }
    d.reset(new (std::nothrow) FrameDeferred(*procedure_, *answer_, table_));
    if (!d) {
      answer_->reset();
      return Status(Errc::kResourceExhausted, "out of memory deferring a reply");
    }
  } else {
    return ServerCall::defer();
  }
  deferred_ = true;
  return d;
}

// Runs `procedure` of `object` over the frame `request` (fixed part then tail, private to
// this process); on success `reply` holds the result frame. `table` is the connection's. A
// call deferred in process leaves in `answer` where its caller waits.
Status dispatchFrame(const HostedObject& object, uint32_t procedure, std::span<const std::byte> request,
                     MessageBuffer& reply, CapTable* table,
                     std::shared_ptr<InProcessAnswer>* answer = nullptr) noexcept {
  const InterfaceDescriptor& iface = *object.iface;
  if (procedure >= iface.procedureCount) return Status(Errc::kBadFrame, "capability call: procedure out of range");
  const ProcedureDescriptor& d = iface.procedures[procedure];
  if (request.size() < d.argsSize) return Status(Errc::kBadFrame, "capability call: frame shorter than its fixed part");
  MessageBuffer results;
  if (Status s = results.resizeForOverwrite(d.resultsSize); !s.isOk()) return s;
  FrameServerCall call(request.first(d.argsSize), request.subspan(d.argsSize), results, table, nullptr, &d, &reply,
                       answer);
  const detail::CurrentCall current(call);
  if (Status s = iface.dispatch(object.server.get(), procedure, call); !s.isOk()) return s;
  if (call.deferred()) return {};  // answered through its FrameDeferred
  return joinReply(call, d, results, reply);
}

// Calls on a Client made with Foo::Client::serve: the object's dispatch, in this process, over
// a private copy of the frame. Capabilities its methods return go into its own table.
class LocalObjectChannel final : public CallChannel {
 public:
  explicit LocalObjectChannel(HostedObject object) noexcept : object_(std::move(object)) {}

  Status call(const InterfaceDescriptor&, uint32_t procedure, const OutMessage& request, MessageBuffer& reply,
              const CallOptions& options) noexcept override {
    MessageBuffer copy;
    if (Status s = copy.resizeForOverwrite(request.size()); !s.isOk()) return s;
    request.copy(0, request.size(), copy.data());
    std::shared_ptr<InProcessAnswer> answer;
    Status s = dispatchFrame(object_, procedure, copy.span(), reply, &table_, &answer);
    if (!answer) return s;
    return answer->wait(std::chrono::nanoseconds(options.timeout.count()));
  }
  const HostedObject* hostedObject() const noexcept override { return &object_; }
  CapTable* exportTable() noexcept override { return &table_; }

 private:
  HostedObject object_;
  CapTable table_;
};

// The inner call of a tunnelled one, served where its frame lies: its arguments are read in
// the tunnel's argument tail (the generated dispatch takes its copy "E" there, as from a
// binding's own A-stack), and its result tail is reserved in the tunnel's result tail, behind
// room for its fixed results, so that the reply is written once, in place.
class TunnelServerCall final : public ServerCall {
 public:
  TunnelServerCall(ServerCall& outer, const ProcedureDescriptor& d, std::span<const std::byte> frame,
                   uint32_t frameAt, std::byte* results, CapTable* table) noexcept
      : ServerCall(frame.first(d.argsSize), frame.subspan(d.argsSize), results),
        outer_(outer),
        d_(d),
        tailAt_(size_t{frameAt} + d.argsSize),
        table_(table) {}

  Result<std::span<std::byte>> resultTail(size_t n) noexcept override {
    if (reserved_) return Status(Errc::kInvalidArgument, "resultTail reserved twice");
    if (n > UINT32_MAX - d_.resultsSize) return Status(Errc::kResourceExhausted, "result tail too large");
    Result<std::span<std::byte>> out = outer_.resultTail(d_.resultsSize + n);
    if (!out.isOk()) return out.status();
    reserved_ = true;
    out_ = *out;
    return out_.subspan(d_.resultsSize);
  }
  // The inner tail is a part of the tunnel's: the same waits, privacy and buffers.
  Status awaitArgTail(size_t end) noexcept override { return outer_.awaitArgTail(tailAt_ + end); }
  bool argTailPrivate() const noexcept override { return outer_.argTailPrivate(); }
  std::vector<uint8_t>* spareBytes() noexcept override { return outer_.spareBytes(); }
  std::vector<uint8_t> takeResultStorage() noexcept override { return outer_.takeResultStorage(); }
  void keepResultStorage(std::vector<uint8_t>& value) noexcept override { outer_.keepResultStorage(value); }
  CapTable* capTable() noexcept override { return table_; }
  std::shared_ptr<Binding> peerCallbacks() noexcept override { return outer_.peerCallbacks(); }
  bool cancelled() const noexcept override { return outer_.cancelled(); }
  Result<std::unique_ptr<DeferredCall>> defer() noexcept override {
    Result<std::unique_ptr<DeferredCall>> outer = outer_.defer();
    if (!outer.isOk()) return outer.status();
    std::unique_ptr<DeferredCall> tunnel = std::move(*outer);
    std::unique_ptr<DeferredCall> d(new (std::nothrow) FrameDeferred(d_, std::move(tunnel)));
    deferred_ = true;
    if (!d) {
      // The tunnel call is deferred already: it must be answered, and this one with it.
      Status s(Errc::kResourceExhausted, "out of memory deferring a reply");
      tunnel->finish(s, nullptr, nullptr);
      return s;
    }
    return d;
  }

  // After a dispatch that was not deferred: the fixed results go in front of the tail, and the
  // tunnel's results say where the inner reply lies.
  Status finish() noexcept {
    if (!reserved_ && d_.resultsSize != 0) {  // an empty reply needs no tail
      Result<std::span<std::byte>> out = outer_.resultTail(d_.resultsSize);
      if (!out.isOk()) return out.status();
      out_ = *out;
    }
    if (d_.resultsSize != 0) std::memcpy(out_.data(), results(), d_.resultsSize);
    const CapCallResults r{{0, static_cast<uint32_t>(out_.size())}};
    std::memcpy(outer_.results(), &r, sizeof r);
    return {};
  }

 private:
  ServerCall& outer_;
  const ProcedureDescriptor& d_;
  size_t tailAt_;  // where the inner tail starts in the tunnel's
  CapTable* table_;
  std::span<std::byte> out_;  // the tunnel's result tail, once reserved
  bool reserved_ = false;
};

}  // namespace

Status serveCapCall(ServerCall& call) noexcept {
  CapTable* table = call.capTable();
  if (table == nullptr) return Status(Errc::kUnsupported, "this path does not carry capabilities");
  if (call.args().size() < sizeof(CapCallArgs)) return Status(Errc::kBadFrame, "capability call: short frame");
  CapCallArgs head;
  std::memcpy(&head, call.args().data(), sizeof head);
  if (head.procedure == kReleaseCap) return table->release(head.object);
  // A call names the interface it calls as; an untyped Capability is cast first (castAs).
  if (head.procedure != kAttachCallbacks && head.iface == Capability::kDescriptor.id) {
    return Status(Errc::kBadFrame, "capability call names no interface");
  }
  const std::span<const std::byte> tail = call.argTail();
  if (!varRefOk(head.frame, tail.size(), 1)) return Status(Errc::kBadFrame, "capability call: frame outside the tail");
  if (head.procedure == kAttachCallbacks) {
    if (head.frame.length > 64) return Status(Errc::kBadFrame, "callback address too long");
    if (Status s = call.awaitArgTail(size_t{head.frame.offset} + head.frame.length); !s.isOk()) return s;
    std::byte where[64];  // read once: a same-host tail is shared with the client
    detail::bulkCopy(where, tail.data() + head.frame.offset, head.frame.length);
    return call.attachCallbacks(std::span<const std::byte>(where, head.frame.length));
  }
  CapTable::Held object;
  if (Status s = table->hold(head.object, head.iface, object); !s.isOk()) return s;
  const InterfaceDescriptor& iface = object.iface();
  // The tunnel's own procedure is not a target: a capability call never nests another.
  if (head.procedure >= iface.procedureCount || (iface.carriesCaps && head.procedure + 1 == iface.procedureCount)) {
    return Status(Errc::kBadFrame, "capability call: procedure out of range");
  }
  const ProcedureDescriptor& d = iface.procedures[head.procedure];
  if (head.frame.length < d.argsSize) return Status(Errc::kBadFrame, "capability call: frame shorter than its fixed part");
  // The fixed part is read by the dispatch's copy "E"; the inner tail as the tunnel's is.
  if (Status s = call.awaitArgTail(size_t{head.frame.offset} + d.argsSize); !s.isOk()) return s;
  MessageBuffer results;
  if (Status s = results.resizeForOverwrite(d.resultsSize); !s.isOk()) return s;
  TunnelServerCall inner(call, d, tail.subspan(head.frame.offset, head.frame.length), head.frame.offset,
                         results.data(), table);
  {
    const detail::CurrentCall current(inner);
    if (Status s = iface.dispatch(object.server(), head.procedure, inner); !s.isOk()) return s;
  }
  if (inner.deferred()) return {};  // the inner call was deferred, and this one with it
  // Our reference to the object is dropped before the fixed results and the tunnel's are
  // stored into the return lines: its atomic decrement would wait for the line the client
  // spins on, which the client then takes back before the return word is stored (a second
  // transfer). A result tail, if any, was written before; that call pays it.
  object.reset();
  return inner.finish();
}

std::shared_ptr<Binding> serveInProcess(HostedObject object) {
  const InterfaceDescriptor& iface = *object.iface;
  auto channel = std::make_shared<LocalObjectChannel>(std::move(object));
  CallChannel* raw = channel.get();
  return std::make_shared<Binding>(iface, raw, std::move(channel));
}

}  // namespace lrpc::detail
