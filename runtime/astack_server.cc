// The server thread of one A-stack (its "E-stack"): waits for a call, validates its control
// block, runs the generated dispatch on the server's private view of the frame, publishes the
// return. One per A-stack a client has used; started by the clerk, stopped with the binding.
#include "runtime/exporter_parts.h"

#include <sched.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <optional>

#include "runtime/base/bulk_copy.h"
#include "runtime/cap_table.h"
#include "runtime/reply_releases.h"
#include "runtime/base/log.h"

namespace lrpc {

using namespace exporter;  // NOLINT: this file implements the exporter's parts

// ---- server call ----

namespace {

class AStackServerCall final : public ServerCall {
 public:
  // A call object of `slot`'s A-stack for call `seq`: everything but the call's own fields
  // (begin()) comes from the slot, set at the handshake.
  AStackServerCall(Connection* conn, ServerSlot* slot, uint32_t seq) noexcept
      : ServerCall(std::span<const std::byte>(frameOf(*slot), slot->pl->argsSize), {},
                   frameOf(*slot) + slot->pl->resultsOff),
        conn_(conn),
        slot_(slot),
        pl_(*slot->pl),
        frame_(frameOf(*slot)),
        argReady_(nullptr),
        cancelWord_(&slot->ret->cancelWord),
        seq_(seq),
        streamable_(false) {}
  static std::byte* frameOf(const ServerSlot& slot) noexcept {
    return reinterpret_cast<std::byte*>(slot.ctl) + kControlBytes;
  }

  std::vector<uint8_t>* spareBytes() noexcept override { return &slot_->spareBytes; }
  std::vector<uint8_t> takeResultStorage() noexcept override { return std::move(slot_->spareResultBytes); }
  void keepResultStorage(std::vector<uint8_t>& value) noexcept override {
    detail::keepLargerStorage(slot_->spareResultBytes, value);
  }

  Status awaitArgTail(size_t end) noexcept override {
    if (argReady_ == nullptr || end <= ready_) return {};
    if (end > argTail_.size()) return Status(Errc::kBadFrame, "argument stream read past its tail");
    const auto cap = static_cast<uint32_t>(argTail_.size());
    return detail::awaitStreamCount(
        *argReady_, cap, end, ready_,
        [this]() noexcept {
          // Relaxed: the flag only ends the wait; nothing is read because of it.
          return slot_->stop.load(std::memory_order_relaxed) ? Status(Errc::kPeerDied, "client went away mid-argument")
                                                             : Status();
        },
        "the client stopped writing its streamed argument");
  }

  CapTable* capTable() noexcept override { return conn_->caps.get(); }
  std::shared_ptr<Binding> peerCallbacks() noexcept override { return conn_->callbackBinding(); }
  bool cancelled() const noexcept override {
    // Relaxed: a hint; whatever the client writes there, it only answers this question.
    return seq_ != 0 && cancelWord_->load(std::memory_order_relaxed) == seq_;
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
    MutexLock lock(slot_->segMu);
    if (!slot_->resultSegment || slot_->resultSegment->size() < n) {
      Result<SharedMemory> seg = SharedMemory::create("lrpc-results", segmentSize(n));
      if (!seg.isOk()) return seg.status();
      auto fresh = std::make_shared<SharedMemory>(std::move(*seg));
      // Sent before the return is published, so the client finds it queued when it looks.
      Message m{MsgType::kResultSegment, slot_->index, fresh->size(), 0, {}};
      if (Status s = detail::sendMessage(conn_->sock.get(), &m, sizeof m, fresh->fd()); !s.isOk()) return s;
      slot_->resultSegment = std::move(fresh);
    }
    segment_ = slot_->resultSegment;
    reserved_ = true;
    length_ = static_cast<uint32_t>(n);
    flags_ = kTailOutOfBand;
    return std::span<std::byte>(slot_->resultSegment->data(), n);
  }

  Result<std::unique_ptr<DeferredCall>> defer() noexcept override;

  // Readies the A-stack's kept call object for call `seq` (ServerSlot::call).
  void begin(std::span<const std::byte> tail, const std::atomic<uint32_t>* argReady, uint32_t seq,
             bool resultStreamable) noexcept {
    restart(tail);
    argReady_ = argReady;
    seq_ = seq;
    ready_ = 0;
    streamable_ = resultStreamable;
    reserved_ = false;
    length_ = 0;
    flags_ = 0;
  }
  // The call is over: what it holds goes now, not at the A-stack's next call.
  void end() noexcept {
    if (segment_ != nullptr) [[unlikely]] segment_.reset();
    if (kept_ != nullptr) [[unlikely]] kept_.reset();
  }

  uint32_t length() const noexcept { return length_; }
  uint8_t flags() const noexcept { return flags_; }
  // The large result value kept to be streamed after the return is published, if any.
  bool streams() const noexcept { return kept_ != nullptr; }
  StreamedResult takeStreamed() noexcept {
    const auto at = static_cast<uint32_t>(keptAt_ - segment_->data());
    return StreamedResult{std::move(kept_), at, std::move(segment_)};
  }

 private:
  bool keepsResults(size_t n) const noexcept override {
    return streamable_ && kept_ == nullptr && flags_ == kTailOutOfBand && n >= kStreamBytes;
  }
  void keepResult(std::byte* dst, std::unique_ptr<KeptResult> kept) noexcept override {
    keptAt_ = dst;
    kept_ = std::move(kept);
  }

  Connection* conn_;
  ServerSlot* slot_;
  const ProcedureLayout& pl_;
  std::byte* frame_;
  const std::atomic<uint32_t>* argReady_;  // null unless the argument tail is streamed
  const std::atomic<uint32_t>* cancelWord_;
  uint32_t seq_;                           // the call's sequence number
  uint32_t ready_ = 0;                      // argument tail bytes known final
  bool streamable_;                         // the client allows a streamed result tail
  bool reserved_ = false;
  uint32_t length_ = 0;
  uint8_t flags_ = 0;
  std::shared_ptr<SharedMemory> segment_;   // the out-of-band result tail's, once reserved
  std::unique_ptr<KeptResult> kept_;        // a value to stream, and where it goes
  std::byte* keptAt_ = nullptr;
};

// A call of an A-stack answered later (runtime/pending.h). The A-stack stays the call's until
// then: its client waits on the return doorbell, and calls no other on it meanwhile.
class AStackDeferred final : public DeferredCall {
 public:
  AStackDeferred(Connection* conn, ServerSlot* slot, std::byte* frame, const std::atomic<uint32_t>* cancelWord,
                 uint32_t seq) noexcept
      : live_(conn->live), conn_(conn), slot_(slot), frame_(frame), cancelWord_(cancelWord), seq_(seq) {}

  void finish(Status status, Writer write, void* value) noexcept override {
    MutexLock lock(live_->mu);
    if (!live_->alive) return;  // the binding ended: nobody waits, and its memory is going
    uint32_t tail = 0;
    uint8_t flags = 0;
    if (status.isOk() && write != nullptr) {
      AStackServerCall call(conn_, slot_, seq_);
      status = write(call, value);
      tail = call.length();
      flags = call.flags();
    }
    const uint32_t written = conn_->writeReturn(slot_, frame_, slot_->procedure, status, tail, flags);
    slot_->deferWritten = written;
    // An answer given while the handler's dispatch still runs is published by that thread.
    if (slot_->deferRace.answered()) conn_->publish(slot_, seq_, written);
  }

  bool cancelled() const noexcept override {
    MutexLock lock(live_->mu);
    // Relaxed: a hint, as in AStackServerCall::cancelled.
    return live_->alive && seq_ != 0 && cancelWord_->load(std::memory_order_relaxed) == seq_;
  }

 private:
  std::shared_ptr<Liveness> live_;
  Connection* conn_;  // valid while live_->alive
  ServerSlot* slot_;
  std::byte* frame_;
  const std::atomic<uint32_t>* cancelWord_;
  uint32_t seq_;
};

Result<std::unique_ptr<DeferredCall>> AStackServerCall::defer() noexcept {
  std::unique_ptr<DeferredCall> d(new (std::nothrow) AStackDeferred(conn_, slot_, frame_, cancelWord_, seq_));
  if (!d) return Status(Errc::kResourceExhausted, "out of memory deferring a reply");
  slot_->deferRace.start();
  deferred_ = true;
  return d;
}

// One more call served on `slot`, for stats(). Relaxed: only whoever serves the A-stack's
// current call writes it.
inline void countCall(ServerSlot* slot) noexcept {
  slot->calls.store(slot->calls.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// Writes the return block of an ok call of `slot` (Connection::writeReturn): inline, since
// every common call ends here. Returns how many bytes from the block it wrote.
inline uint32_t writeOkReturn(ServerSlot* slot, uint32_t resultTail, uint8_t resultFlags, uint32_t releasedId) noexcept {
  ReturnControl* ret = slot->ret;
  // On every return, ok or not: the block keeps what the last call left in it.
  detail::storeOnce(ret->releasedId, releasedId);
  detail::storeOnce(ret->resultTail, resultTail);
  detail::storeOnce(ret->resultFlags, resultFlags);
  detail::storeOnce(ret->status, uint8_t{0});
  const ProcedureLayout& pl = *slot->pl;
  return pl.resultTailOff - pl.returnOff + (resultFlags == 0 ? resultTail : 0);
}

}  // namespace

void SlotCallDelete::operator()(ServerCall* call) const noexcept { delete static_cast<AStackServerCall*>(call); }

AStackControl* Connection::control(uint32_t i) const {
  return reinterpret_cast<AStackControl*>(region->data() + exp->layout->astackOffset(i));
}

Status Connection::dispatchWithCallbacks(ServerSlot* slot, uint32_t procedure, ServerCall& call,
                                         const std::atomic<uint32_t>* guestSeq, uint32_t seq, uint32_t* released) {
  const detail::CallOrigin origin(this, static_cast<uint16_t>(slot->index + 1), guestSeq, seq);
  // The client's objects the handler drops: the first rides on the return (astack_format.md,
  // "Releases ride on the return"), saving the release call a callback would cost.
  detail::ReplyReleases releases(call);
  Status s = exp->iface->dispatch(exp->impl, procedure, call);
  releases.close();
  // A deferred answer writes its return elsewhere, later: its releases go now.
  if (!call.deferred() && !releases.ids().empty()) *released = releases.ids()[0];
  releases.releaseFrom(*released != 0 ? 1 : 0);
  return s;
}

void Connection::runCall(ServerSlot* slot, uint32_t seq) {
  AStackControl* ctl = slot->ctl;
  // Each control field is read once; from here on only the private copies are used.
  const CallFields f{detail::loadOnce(ctl->key), detail::loadOnce(ctl->procedure), detail::loadOnce(ctl->argTail),
                     detail::loadOnce(ctl->argFlags)};
  auto* call = static_cast<AStackServerCall*>(slot->call.get());
  // The common call: the right key and procedure, any argument tail inline, the A-stack's call
  // object made, and no callbacks passed. Everything else, and every return but an ok one with
  // its result tail inline, goes out of line: with all of it in this function a Null call's
  // server ran 277 instructions, and 202 without (bench/README.md, "The server's common call").
  // Relaxed, hasCallbacks: as in runGeneralCall.
  if (f.key != key || f.procedure != slot->procedure || (f.argFlags & ~kResultStreamable) != 0 ||
      f.argTail > slot->pl->tailRoom || call == nullptr || hasCallbacks.load(std::memory_order_relaxed)) [[unlikely]] {
    runGeneralCall(slot, seq, f);
    return;
  }
  const ProcedureLayout& pl = *slot->pl;
  std::byte* frame = AStackServerCall::frameOf(*slot);
  call->begin(std::span<const std::byte>(frame + pl.argTailOff, f.argTail), nullptr, seq,
              (f.argFlags & kResultStreamable) != 0);
  Status s;
  {
    const detail::CurrentCall current(*call);
    s = exp->iface->dispatch(exp->impl, f.procedure, *call);
  }
  // A result tail out of band (which may stream), a deferred answer or an error: the general
  // ending. With none of them the call object holds nothing to drop (AStackServerCall::end).
  if (!s.isOk() || call->flags() != 0 || call->deferred()) [[unlikely]] {
    finishCall(slot, seq, f.procedure, std::move(s), 0);
    return;
  }
  countCall(slot);
  // The return block's stores and the doorbell's follow each other with nothing between them:
  // the client spins on that line, and a gap lets its read take the line back after the first
  // store, so that the doorbell's store would move the line a second time.
  publish(slot, seq, writeOkReturn(slot, call->length(), 0, 0));
}

[[gnu::noinline]] void Connection::runGeneralCall(ServerSlot* slot, uint32_t seq, const CallFields& f) {
  AStackControl* ctl = slot->ctl;
  const ProcedureLayout& pl = *slot->pl;
  std::byte* frame = AStackServerCall::frameOf(*slot);
  const uint32_t procedure = f.procedure;
  const uint32_t argTail = f.argTail;
  const bool resultStreamable = (f.argFlags & kResultStreamable) != 0;
  const auto argFlags = static_cast<uint8_t>(f.argFlags & ~kResultStreamable);

  Status s;
  std::shared_ptr<SharedMemory> argSegment;  // keeps a segment mapped while the handler reads it
  std::span<const std::byte> tail;
  if (f.key != key) [[unlikely]] {
    s = Status(Errc::kBindingRejected, "call carries a forged binding key");
  } else if (procedure != slot->procedure) [[unlikely]] {
    s = Status(Errc::kBadFrame, "procedure does not match the A-stack");
  } else if (argFlags == 0 && argTail <= pl.tailRoom) [[likely]] {
    tail = std::span<const std::byte>(frame + pl.argTailOff, argTail);
  } else if (argFlags == kTailOutOfBand || argFlags == (kTailOutOfBand | kTailStreaming)) {
    {
      MutexLock lock(slot->segMu);
      argSegment = slot->argSegment;
    }
    if (!argSegment || argTail > argSegment->size()) {
      s = Status(Errc::kBadFrame, "argument tail beyond its out-of-band segment");
    } else {
      tail = std::span<const std::byte>(argSegment->data(), argTail);
    }
  } else {
    s = Status(Errc::kBadFrame, "argument tail longer than the A-stack");
  }

  if (s.isOk() && slot->call == nullptr) [[unlikely]] {
    slot->call.reset(new (std::nothrow) AStackServerCall(this, slot, 0));
    if (slot->call == nullptr) s = Status(Errc::kResourceExhausted, "out of memory for a call");
  }
  if (!s.isOk()) {
    countCall(slot);
    publish(slot, seq, writeReturn(slot, frame, procedure, s, 0, 0, 0));
    return;
  }
  // The result part is not cleared: the generated dispatch writes every field, and bytes
  // between fields hold only what this server wrote there before (astack_format.md).
  auto& call = *static_cast<AStackServerCall*>(slot->call.get());
  call.begin(tail, (argFlags & kTailStreaming) != 0 ? &ctl->argReady : nullptr, seq, resultStreamable);
  uint32_t released = 0;
  {
    const detail::CurrentCall current(call);
    // Relaxed: set by the clerk before the client passes its first callback, which it does in
    // a call's frame; a call that races it names no origin, and its callbacks go to the host.
    if (hasCallbacks.load(std::memory_order_relaxed)) [[unlikely]] {
      s = dispatchWithCallbacks(slot, procedure, call, &slot->ret->guestSeq, seq, &released);
    } else {
      s = exp->iface->dispatch(exp->impl, procedure, call);
    }
  }
  finishCall(slot, seq, procedure, std::move(s), released);
}

[[gnu::noinline]] void Connection::finishCall(ServerSlot* slot, uint32_t seq, uint32_t procedure, Status s, uint32_t released) {
  auto& call = *static_cast<AStackServerCall*>(slot->call.get());
  std::byte* frame = AStackServerCall::frameOf(*slot);
  const uint32_t resultTail = call.length();
  const uint8_t resultFlags = call.flags();
  const bool deferred = call.deferred();
  countCall(slot);
  if (call.streams() && s.isOk() && !deferred) [[unlikely]] {
    streamReturn(slot, frame, procedure, seq, resultTail, released, call.takeStreamed());
    return;
  }
  // Before the return: after it, the A-stack's next call may be served by another thread,
  // which readies the same call object.
  call.end();
  if (deferred) {
    // We publish an answer given during dispatch; otherwise the answer to come does
    // (AStackDeferred::finish), and the slot is not ours after.
    if (slot->deferRace.handBack()) publish(slot, seq, slot->deferWritten);
    return;
  }
  // As in runCall: nothing between the return block's stores and the doorbell's.
  publish(slot, seq, writeReturn(slot, frame, procedure, s, resultTail, resultFlags, released));
}

uint32_t Connection::writeReturn(ServerSlot* slot, std::byte* frame, uint32_t procedure, const Status& s,
                                 uint32_t resultTail, uint8_t resultFlags, uint32_t releasedId) {
  if (s.isOk()) return writeOkReturn(slot, resultTail, resultFlags, releasedId);
  const ProcedureLayout& pl = *slot->pl;
  ReturnControl* ret = slot->ret;
  // On every return, ok or not: the block keeps what the last call left in it.
  detail::storeOnce(ret->releasedId, releasedId);
  slot->errors.store(slot->errors.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (detail::logOn(LogTopic::kErrors)) {
    detail::logf(LogTopic::kErrors, "\"%s\": call of procedure %u answered with %s", exp->name.c_str(), procedure,
                 s.toString().c_str());
  }
  // The detail text goes where the results would, cut to kMaxWireDetail as on the network (the
  // frame has that much room: kMinErrorBytes): the results are not valid on an error, and those
  // lines are ours. No detail stays none, as on the network: the code says it.
  const std::string_view text = s.detail();
  const uint32_t len = static_cast<uint32_t>(std::min<size_t>(text.size(), kMaxWireDetail));
  std::memcpy(frame + pl.resultsOff, text.data(), len);
  detail::storeOnce(ret->resultTail, len);
  detail::storeOnce(ret->resultFlags, uint8_t{0});
  detail::storeOnce(ret->status, static_cast<uint8_t>(s.code()));
  return kControlBytes + len;
}

namespace {

// Whether sequence number `seq` comes after `than` (they wrap).
bool newer(uint32_t seq, uint32_t than) noexcept { return static_cast<int32_t>(seq - than) > 0; }

// Takes call `seq` of `slot` for the calling thread: true for exactly one of the threads that
// try. Never moves backwards: a thread may have read the doorbell before another took that
// call and the client rang the next. Not while the call before is still being served: only a
// client that rang again before its return does that, and the two calls would share the slot's
// buffers. Its call waits for the next thread that looks at the doorbell once the first call
// has finished: the one that finished it, a helper, or at worst the client's next ring.
bool claim(ServerSlot& slot, uint32_t seq) noexcept {
  // Acquire: a call's previous server finished with the slot before it moved `served` on.
  uint32_t cur = slot.served.load(std::memory_order_acquire);
  while (newer(seq, cur)) {
    // Acquire: pairs with the release that finished call `cur` (publish, streamReturn).
    if (slot.finished.load(std::memory_order_acquire) != cur) return false;
    // Acq_rel: the winner sees the previous server's writes and publishes its own claim.
    if (slot.served.compare_exchange_weak(cur, seq, std::memory_order_acq_rel, std::memory_order_acquire)) {
      // Acquire: pairs with the release in runCall of whoever served the A-stack's last call.
      (void)slot.finished.load(std::memory_order_acquire);
      return true;
    }
  }
  return false;
}

// The lines of a call's argument past the doorbell's (transfer.h, prefetchAfterFirstLine): the
// fixed part and the inline tail as far as the call says it wrote. Only a hint, so the words
// are not checked here (runCall does). A call whose argument fits the doorbell's line (Null,
// Add) costs a load and a branch.
inline void prefetchArguments(const ServerSlot& slot) noexcept {
  if (slot.argLinesEnd == 0) return;
  const uint32_t room = slot.pl->tailRoom;
  const AStackControl* ctl = slot.ctl;
  const uint32_t tail =
      room != 0 && (detail::loadOnce(ctl->argFlags) & ~kResultStreamable) == 0 ? std::min(detail::loadOnce(ctl->argTail), room) : 0;
  detail::prefetchAfterFirstLine(ctl, slot.argLinesEnd + tail);
}

}  // namespace

void Connection::publish(ServerSlot* slot, uint32_t seq, uint32_t written) {
  // Release: the next server of this A-stack, maybe another thread, starts after our writes.
  slot->finished.store(seq, std::memory_order_release);
  ringReturn(slot, seq, written);
}

void Connection::ringReturn(ServerSlot* slot, uint32_t seq, uint32_t written) {
  ReturnControl* ret = slot->ret;
  detail::timeline(detail::Mark::kServerReturn, seq);
  detail::ring(ret->returnWord, ret->clientSleeping, seq);
  detail::demoteAfterFirstLine(ret, written);
}

void Connection::streamReturn(ServerSlot* slot, std::byte* frame, uint32_t procedure, uint32_t seq, uint32_t tail,
                              uint32_t released, StreamedResult r) {
  ReturnControl* ret = slot->ret;
  const std::span<const std::byte> value = r.value->bytes();
  // Relaxed: published with the return by the release in ring(). The tail before the value
  // is final already (values are written in offset order).
  ret->resultReady.store(r.at, std::memory_order_relaxed);
  ringReturn(slot, seq, writeReturn(slot, frame, procedure, Status{}, tail, kTailOutOfBand | kTailStreaming, released));
  std::byte* dst = r.segment->data() + r.at;
  for (size_t done = 0; done < value.size();) {
    const size_t c = std::min(value.size() - done, kStreamChunk);
    detail::bulkCopy(dst + done, value.data() + done, c);
    done += c;
    if (done == value.size()) break;  // the last count is the whole tail's, below
    // Release: the client reads these bytes once it sees them counted.
    ret->resultReady.store(static_cast<uint32_t>(r.at + done), std::memory_order_release);
    // Relaxed, both: hints to stop early. A client that gave up reads none of it, and the
    // binding's end stops it; either way the count below still says "done".
    if (ret->cancelWord.load(std::memory_order_relaxed) == seq || slot->stop.load(std::memory_order_relaxed)) break;
  }
  std::vector<uint8_t> storage = r.value->takeStorage();
  detail::keepLargerStorage(slot->spareResultBytes, storage);
  r.value.reset();
  // Release: the next server of this A-stack starts after our writes (as in publish()), and
  // only once the client has all of the tail can it make the next call.
  slot->finished.store(seq, std::memory_order_release);
  // Release: the whole tail is final. After this store the A-stack is the client's again:
  // nothing of it is touched below.
  ret->resultReady.store(tail, std::memory_order_release);
}

template <class Wanted>
std::optional<uint32_t> Connection::waitingCall(const ServerSlot& slot, Wanted&& wanted) const noexcept {
  // Acquire: pairs with the caller's release in ring(); the call's frame is visible after it.
  const AStackControl* ctl = slot.ctl;
  const uint32_t seq = ctl->callWord.load(std::memory_order_acquire);
  // Relaxed: a first look only; claim() decides.
  if (!newer(seq, slot.served.load(std::memory_order_relaxed))) return std::nullopt;
  if (!wanted(seq, *ctl)) return std::nullopt;
  // Acquire, after the word: a stopping A-stack's word moved without a call (stopWaiter).
  if (slot.stop.load(std::memory_order_acquire)) return std::nullopt;
  return seq;
}

bool Connection::help(ServerSlot** selfp, std::vector<uint32_t>& seen) {
  ServerSlot* self = *selfp;
  // `stop` relaxed: only whether to look; the binding's teardown joins this thread anyway. A
  // binding with one server thread (one synchronous caller) has nobody to help: the list's
  // length says so, so that a frequent look costs such a binding one load.
  const std::span<std::atomic<ServerSlot*>> all = started();
  if (self->stop.load(std::memory_order_relaxed) || all.size() < 2) return false;
  for (std::atomic<ServerSlot*>& entry : all) {
    // Relaxed: started()'s acquire made the entry visible.
    ServerSlot* other = entry.load(std::memory_order_relaxed);
    if (other == self) continue;
    const uint32_t i = other->index;
    // A call seen for the first time is left to its own thread, which may be about to take it:
    // taking it would move its A-stack's lines to this core for nothing.
    const std::optional<uint32_t> waiting = waitingCall(*other, [this, other, &seen, i](uint32_t seq, const AStackControl&) {
      // A callback whose caller waits for the call it serves is that caller's, as in serve().
      if (forGuest(other)) return false;
      if (seen[i] == seq) return true;
      seen[i] = seq;
      return false;
    });
    if (!waiting) continue;
    const uint32_t seq = *waiting;
    // Our A-stack goes to the other's thread before we claim: if the call we run waits for a
    // call on our A-stack, that thread serves it. One hand-over per A-stack at a time.
    ServerSlot* none = nullptr;
    // Release: whoever takes it (after our claim, which it sees) serves our A-stack from then on.
    if (!other->handoff.compare_exchange_strong(none, self, std::memory_order_acq_rel, std::memory_order_relaxed)) {
      continue;
    }
    const bool claimed = claim(*other, seq);
    if (claimed) runCall(other, seq);
    // Ours back, unless its new thread took it: then we serve the other's A-stack instead.
    ServerSlot* ours = self;
    // Acq_rel: pairs with the other thread's exchange in serve().
    if (!other->handoff.compare_exchange_strong(ours, nullptr, std::memory_order_acq_rel, std::memory_order_acquire)) {
      *selfp = other;
      return true;
    }
    if (claimed) return true;  // one at a time: back to our own A-stack before the next
  }
  return false;
}

bool Connection::enterGuest() noexcept {
  // Acquire: pairs with the clerk's release after the handshake.
  if (!guestReady.load(std::memory_order_acquire)) return false;
  // Seq_cst, both, as the teardown's store of guestsClosed and its loads of guests: either it
  // sees this guest counted and waits for it, or this sees it closed and leaves.
  guests.fetch_add(1, std::memory_order_seq_cst);
  if (guestsClosed.load(std::memory_order_seq_cst)) {
    leaveGuest();
    return false;
  }
  return true;
}

void Connection::leaveGuest() noexcept {
  // Release: the teardown, seeing no guest, may unmap what this one read.
  guests.fetch_sub(1, std::memory_order_release);
}

bool Connection::serveGuest(uint16_t origin, detail::LazyDeadline* arm) noexcept {
  for (std::atomic<ServerSlot*>& entry : started()) {
    // Relaxed: started()'s acquire made the entry visible.
    ServerSlot* slot = entry.load(std::memory_order_relaxed);
    const std::optional<uint32_t> seq = waitingCall(
        *slot, [origin](uint32_t, const AStackControl& ctl) { return detail::loadOnce(ctl.origin) == origin; });
    if (!seq || !claim(*slot, *seq)) continue;
    if (arm != nullptr) (void)arm->ns();
    runCall(slot, *seq);
    return true;
  }
  return false;
}

bool Connection::forGuest(ServerSlot* slot) const noexcept {
  if (guestSeats.base == nullptr) return false;
  return guestSeats.taken(detail::loadOnce(slot->ctl->origin));
}

void Connection::serve(ServerSlot* slot, uint32_t last) {
  struct Helper {
    Connection* conn;
    ServerSlot* slot;  // the A-stack this thread serves now
    std::vector<uint32_t> seen;
  } helper{this, slot, std::vector<uint32_t>(made().size(), 0)};
  const detail::Help help = made().size() > 1 ? detail::Help{[](void* h) {
    auto* self = static_cast<Helper*>(h);
    return self->conn->help(&self->slot, self->seen);
  }, &helper} : detail::Help{};
  // Moves this thread to the A-stack a helper handed us, if one did: its calls from the last
  // one served on (a call rung meanwhile is then found at once).
  auto adopt = [&helper, &last](ServerSlot* from) {
    // Relaxed: a first look, so that the common case (no hand-over) costs no read-modify-write
    // on the call path; a stale null only delays the move to the failed claim's look below.
    if (from->handoff.load(std::memory_order_relaxed) == nullptr) return false;
    // Acq_rel: pairs with the helper's release when it handed its A-stack over.
    ServerSlot* to = from->handoff.exchange(nullptr, std::memory_order_acq_rel);
    if (to == nullptr) return false;
    helper.slot = to;
    // Acquire: pairs with claim()'s release of whoever served its last call.
    last = to->served.load(std::memory_order_acquire);
    return true;
  };
  // After leaving a call to a guest, the next wait sleeps at once: the guest's caller keeps
  // its callbacks coming, and a thread spinning beside the two would only take their CPU.
  TransferMode waitMode = mode;
  for (;;) {
    ServerSlot* at = helper.slot;
    AStackControl* ctl = at->ctl;
    uint32_t seq = 0;
    const detail::WaitResult r = detail::waitForCall(ctl->callWord, ctl->serverSleeping, last, waitMode, at->stop, &seq, help);
    waitMode = mode;
    if (r == detail::WaitResult::kHelped) {
      // Served another A-stack's call; we may serve that one now (help moved helper.slot).
      if (helper.slot != at) last = helper.slot->served.load(std::memory_order_acquire);
      continue;
    }
    if (r != detail::WaitResult::kReady) return;
    detail::timeline(detail::Mark::kServerCall, seq);
    last = seq;
    prefetchArguments(*at);
    // A helper that took our call gave us its A-stack: serve that one instead. Looked at
    // before claiming too, so that both threads do not stay on one A-stack.
    if (adopt(at)) continue;
    // A callback whose caller waits for the call it serves: that thread runs it.
    if (forGuest(at)) [[unlikely]] {
      waitMode = TransferMode::kBlock;
      continue;
    }
    if (claim(*at, seq)) {
      runCall(at, seq);
    } else {
      (void)adopt(at);  // taken by a helper, whose hand-over the failed claim made visible
    }
  }
}

}  // namespace lrpc
