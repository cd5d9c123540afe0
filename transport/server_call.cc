// The handler's side of the UDP server: the ServerCall the generated dispatch sees, a call
// answered later through a Reply (runtime/pending.h), and running one job.
#include <cstring>
#include <new>
#include <utility>

#include "transport/server.h"
#include "runtime/cap_table.h"
#include "runtime/reply_releases.h"

namespace lrpc::net {

// The ServerCall the generated dispatch sees: arguments straight from the datagram (or the
// reassembled request); the fixed results into the server's `fixed` buffer, copied to the
// head of the slot's cached reply once the handler is done, and the result tail straight into
// that reply, where it will leave from, so a large result is not copied a second time.
class UdpServer::Call final : public ServerCall {
 public:
  // Where the reply is made: the slot's own, or a deferred call's (DeferLink).
  struct Target {
    MessageBuffer& reply;
    std::unique_ptr<KeptResult>& kept;
    size_t& keptAt;
  };

  Call(UdpServer& server, const Job& job, std::span<const std::byte> args, std::span<const std::byte> tail,
       MessageBuffer& fixed, Target target) noexcept
      : ServerCall(args, tail, fixed.data()),
        server_(server),
        job_(job),
        fixedBytes_(fixed.size()),
        reply_(target.reply),
        target_(target),
        caps_(job.caps.get()),
        callbacks_(job.callbacks.get()),
        cancelled_(job.slot->cancelled) {}
  CapTable* capTable() noexcept override { return caps_; }
  std::shared_ptr<Binding> peerCallbacks() noexcept override {
    if (callbacks_ == nullptr) return nullptr;
    MutexLock lock(callbacks_->mu);
    return callbacks_->binding;
  }
  Status attachCallbacks(std::span<const std::byte> where) noexcept override {
    if (callbacks_ == nullptr) return ServerCall::attachCallbacks(where);
    return server_.attachCallbacks(*callbacks_, where);
  }
  // Relaxed: a hint for the handler; nothing is read because of it.
  bool cancelled() const noexcept override { return cancelled_.load(std::memory_order_relaxed); }
  Result<std::span<std::byte>> resultTail(size_t n) noexcept override {
    if (reserved_) return Status(Errc::kInvalidArgument, "resultTail reserved twice");
    if (n > UINT32_MAX) return Status(Errc::kResourceExhausted, "result tail too large");
    size_t total = fixedBytes_ + n;
    // Emptied first, so that a lent buffer takes over no bytes; not zeroed: the generated
    // code writes the whole tail, and execute() the fixed part.
    (void)reply_.resize(0);
    if (total > reply_.capacity()) server_.replyShelf_.lend(reply_, total);
    if (Status s = reply_.resizeForOverwrite(total); !s.isOk()) return s;
    reserved_ = true;
    return reply_.span().subspan(fixedBytes_);
  }
  // The request's frame is the slot's own (copied out of the datagram, or reassembled), and
  // stays put while the handler runs: the slot is kRunning, so nothing else touches it.
  bool argTailPrivate() const noexcept override { return true; }
  bool reserved() const noexcept { return reserved_; }

  // One large result value is kept, not copied: the reply is cached in the slot until the
  // client has it all, and its fragments are sent from the value's own storage (OutMessage).
  // One at most, so that a fragment spans at most two pieces.
  // The storage of a large result the client has received whole (UdpServer's ResultShelf).
  std::vector<uint8_t> takeResultStorage() noexcept override { return server_.resultShelf_.take(); }
  void keepResultStorage(std::vector<uint8_t>& value) noexcept override { server_.resultShelf_.put(value); }
  bool keepsResults(size_t) const noexcept override { return kept_ == nullptr; }
  void keepResult(std::byte* dst, std::unique_ptr<KeptResult> kept) noexcept override {
    keptAt_ = static_cast<size_t>(dst - reply_.data());
    kept_ = std::move(kept);
  }
  Result<std::unique_ptr<DeferredCall>> defer() noexcept override;

  // Makes the target's reply this call's, answered with `result`: the fixed part written to
  // results() before its tail, and the kept value beside it.
  Status complete(Status result) noexcept {
    if (!result.isOk()) return result;
    target_.kept = std::move(kept_);
    target_.keptAt = keptAt_;
    if (!reserved_) {
      (void)reply_.resize(0);  // no tail: the reply is the fixed part alone
      if (Status s = reply_.resize(fixedBytes_); !s.isOk()) return s;
    }
    if (fixedBytes_ > 0) std::memcpy(reply_.data(), results_, fixedBytes_);
    return {};
  }
  // The deferred call this one became (defer()).
  const std::shared_ptr<DeferLink>& link() const noexcept { return link_; }

 private:
  UdpServer& server_;
  const Job& job_;
  size_t fixedBytes_;
  MessageBuffer& reply_;
  Target target_;
  std::shared_ptr<DeferLink> link_;
  CapTable* caps_;
  PeerCallbacks* callbacks_;
  const WrittenUnder<bool>& cancelled_;
  bool reserved_ = false;
  std::unique_ptr<KeptResult> kept_;
  size_t keptAt_ = 0;
};


// A call answered later (runtime/pending.h): the slot stays kRunning until then, so that the
// client's retransmissions learn the call is alive, and the job is finished by the answer.
class UdpServer::Deferred final : public DeferredCall {
 public:
  Deferred(UdpServer& server, const Job& job, std::shared_ptr<DeferLink> link, uint32_t resultsSize)
      : life_(server.life_),
        server_(server),
        job_{job.session, job.service, job.slots, job.slot, nullptr, nullptr},
        caps_(job.caps),
        callbacks_(job.callbacks),
        hadCaps_(job.caps != nullptr),
        link_(std::move(link)),
        resultsSize_(resultsSize) {}

  void finish(Status status, Writer write, void* value) noexcept override {
    Job job;  // before the lock: the tables it holds may be the last references
    MutexLock life(life_->mu);
    if (!life_->alive) return;  // the server stopped: nobody sends the answer
    // Weak: a Reply kept in an object of the session's own table must not keep the table.
    job = Job{job_.session, job_.service, job_.slots, job_.slot, caps_.lock(), callbacks_.lock()};
    if (hadCaps_ && !job.caps) return;  // the session has ended: nobody to answer
    DeferLink& link = *link_;
    if (status.isOk()) {
      MessageBuffer fixed;
      status = fixed.resize(resultsSize_);  // zeroed
      if (status.isOk()) {
        Call call(server_, job, {}, {}, fixed, {link.reply, link.kept, link.keptAt});
        if (write != nullptr) status = write(call, value);
        status = call.complete(std::move(status));
      }
    }
    link.status = std::move(status);
    // An answer given while the handler's dispatch still runs is finished by that thread.
    if (link.race.answered()) {
      MutexLock lock(server_.mu_);
      server_.finishDeferred(job, link);
    }
  }
  bool cancelled() const noexcept override {
    // Relaxed: hints, as in Call::cancelled; once detached, the slot's flag is another call's.
    return link_->detached.load(std::memory_order_relaxed) || job_.slot->cancelled.load(std::memory_order_relaxed);
  }

 private:
  std::shared_ptr<Life> life_;
  UdpServer& server_;  // valid while life_->alive
  Job job_;            // keeps the slot while the answer is due (not the tables: below)
  std::weak_ptr<CapTable> caps_;
  std::weak_ptr<PeerCallbacks> callbacks_;
  bool hadCaps_;
  std::shared_ptr<DeferLink> link_;
  uint32_t resultsSize_;
};

Result<std::unique_ptr<DeferredCall>> UdpServer::Call::defer() noexcept {
  const ProcedureDescriptor& pd = job_.service->iface->procedures[job_.slot->procedure];
  std::unique_ptr<DeferredCall> d;
  try {
    link_ = std::make_shared<DeferLink>();
    d = std::make_unique<Deferred>(server_, job_, link_, pd.resultsSize);
  } catch (const std::bad_alloc&) {
    link_.reset();
    return Status(Errc::kResourceExhausted, "out of memory deferring a reply");
  }
  {
    // Registered before any answer can come: the Reply is not out of dispatch yet.
    MutexLock lock(server_.mu_);
    job_.slot->deferred.get(server_.mu_) = link_;
  }
  deferred_ = true;
  return d;
}

Status UdpServer::adoptAnswer(Slot& slot, DeferLink& link) noexcept {
  if (!link.status.isOk()) return std::move(link.status);
  if (Status s = slot.reply.resizeForOverwrite(link.reply.size()); !s.isOk()) return s;
  if (link.reply.size() != 0) std::memcpy(slot.reply.data(), link.reply.data(), link.reply.size());
  slot.kept = std::move(link.kept);
  slot.keptAt = link.keptAt;
  return {};
}

void UdpServer::finishDeferred(const Job& job, DeferLink& link) noexcept {
  // Relaxed: written under mu_, which we hold.
  if (link.detached.load(std::memory_order_relaxed) || job.slot->deferred.get(mu_).get() != &link) return;
  finishJob(job, adoptAnswer(*job.slot, link));
}

Status UdpServer::execute(const Job& job, MessageBuffer& fixed, bool* deferred) noexcept {
  Slot& slot = *job.slot;
  const InterfaceDescriptor& iface = *job.service->iface;
  if (slot.procedure >= iface.procedureCount) return Status(Errc::kInvalidArgument, {"no procedure ", lrpc::detail::Decimal(slot.procedure)});
  const ProcedureDescriptor& pd = iface.procedures[slot.procedure];
  std::span<const std::byte> frame = std::as_const(*slot.request).span();
  if (frame.size() < pd.argsSize) return Status(Errc::kBadFrame, "request shorter than the argument frame");
  if (Status st = fixed.resize(0); !st.isOk()) return st;
  if (Status st = fixed.resize(pd.resultsSize); !st.isOk()) return st;  // zeroed
  Call call(*this, job, frame.first(pd.argsSize), frame.subspan(pd.argsSize), fixed, {slot.reply, slot.kept, slot.keptAt});
  executed_.fetch_add(1, std::memory_order_relaxed);
  const lrpc::detail::CurrentCall current(call);
  lrpc::detail::ReplyReleases releases(call);
  Status result = iface.dispatch(job.service->server, slot.procedure, call);
  releases.close();
  if (call.deferred()) {
    releases.releaseNow();  // the answer is made elsewhere, perhaps much later
    DeferLink& link = *call.link();
    // We finish the job with an answer given during dispatch; otherwise the answer to come
    // does (Deferred::finish), and the slot may go to a newer call meanwhile.
    *deferred = !link.race.handBack();
    return *deferred ? Status() : adoptAnswer(slot, link);
  }
  Status done = call.complete(std::move(result));
  if (!releases.ids().empty() && !(done.isOk() && carryReleases(slot, job.fragmentBytes, releases.ids()))) {
    releases.releaseNow();
  }
  return done;
}

static_assert(lrpc::detail::ReplyReleases::kMax == kMaxReplyReleases, "a reply carries what a handler notes");

bool UdpServer::carryReleases(Slot& slot, size_t fragmentBytes, std::span<const uint32_t> ids) noexcept {
  // Only on a reply of one datagram: the client reads the ids where the datagram ends.
  const size_t results = slot.reply.size();
  const size_t total = results + releaseTrailerBytes(ids.size());
  if (slot.kept || total > fragmentBytes || !slot.reply.resizeForOverwrite(total).isOk()) return false;
  writeReleases(slot.reply.span().subspan(results), ids);
  slot.replyFlags = kFlagReleases;
  return true;
}

}  // namespace lrpc::net
