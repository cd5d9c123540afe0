// What generated source files (foo.lrpc.cc) are compiled against: the two call paths (RemoteCall
// here, LocalCall in runtime/local_call.h) and the Call concept they model, the ServerCall a
// generated dispatch reads and writes, the codec's templates and the capability tables. The
// types a generated header names are in runtime/contract.h; only the source file includes
// this one, so user code never compiles the runtime's call paths.
#pragma once

#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/duration.h"
#include "runtime/base/status.h"
#include "runtime/codec.h"
#include "runtime/codec_view.h"
#include "runtime/contract.h"
#include "runtime/pending.h"
#include "runtime/reply.h"

namespace lrpc {

// A growable byte buffer with inline room for small messages, so that a small remote call
// allocates nothing. Storage is 16-byte aligned, enough for every frame.
class MessageBuffer {
 public:
  static constexpr size_t kInline = 512;

  MessageBuffer() noexcept = default;
  MessageBuffer(const MessageBuffer&) = delete;
  MessageBuffer& operator=(const MessageBuffer&) = delete;

  std::byte* data() noexcept { return heap_ ? heap_.get() : inline_; }
  const std::byte* data() const noexcept { return heap_ ? heap_.get() : inline_; }
  size_t size() const noexcept { return size_; }
  std::span<std::byte> span() noexcept { return {data(), size_}; }
  std::span<const std::byte> span() const noexcept { return {data(), size_}; }

  // Sets the size, keeping the first min(old, n) bytes; new bytes are zero.
  Status resize(size_t n) noexcept {
    size_t old = size_;
    if (Status s = resizeForOverwrite(n); !s.isOk()) return s;
    if (n > old) std::memset(data() + old, 0, n - old);
    return {};
  }

  // The same, but new bytes are left as they are: for a caller that writes every one of them
  // before anything reads them (reassembly: a message is delivered only once every fragment
  // has been copied in). Saves a pass over a large buffer.
  Status resizeForOverwrite(size_t n) noexcept {
    if (n > capacity_) {
      size_t cap = capacity_ * 2 > n ? capacity_ * 2 : n;
      std::unique_ptr<std::byte[]> fresh(new (std::nothrow) std::byte[cap]);
      if (!fresh) return Status(Errc::kResourceExhausted, "message buffer allocation failed");
      std::memcpy(fresh.get(), data(), size_);
      heap_ = std::move(fresh);
      capacity_ = cap;
    }
    size_ = n;
    return {};
  }

  // Heap storage handed between buffers (CallChannel::lend and recycle): a large message then
  // reuses pages already faulted in instead of a fresh allocation per call.
  bool onHeap() const noexcept { return heap_ != nullptr; }
  size_t capacity() const noexcept { return capacity_; }
  // Gives up the heap storage (if any); the buffer is empty and inline again.
  std::unique_ptr<std::byte[]> releaseHeap(size_t* capacity) noexcept {
    *capacity = heap_ ? capacity_ : 0;
    size_ = 0;
    capacity_ = kInline;
    return std::move(heap_);
  }
  // Takes `storage` of `capacity` bytes as its heap, keeping its bytes, when that is more room
  // than it has (else `storage` is freed).
  void adoptHeap(std::unique_ptr<std::byte[]> storage, size_t capacity) noexcept {
    if (!storage || capacity <= capacity_) return;
    std::memcpy(storage.get(), data(), size_);
    heap_ = std::move(storage);
    capacity_ = capacity;
  }

 private:
  alignas(16) std::byte inline_[kInline];
  std::unique_ptr<std::byte[]> heap_;
  size_t size_ = 0;
  size_t capacity_ = kInline;
};

// A request on its way out: `bytes`, except that [borrowAt, borrowAt + borrowed.size()) is
// read from `borrowed`, one large argument value where the caller keeps it (RemoteCall
// borrows it instead of copying it; the kernel's copy into the datagrams is then the only one).
// Everything it names stays valid and unchanged until CallChannel::call returns.
class OutMessage {
 public:
  // At most three pieces: before the borrowed range, in it, after it.
  struct Pieces {
    std::span<const std::byte> at[3];
    uint32_t count = 0;
  };

  // Implicit: a plain frame is a message that borrows nothing.
  OutMessage(std::span<const std::byte> bytes) noexcept : bytes_(bytes) {}
  // `borrowed` must lie inside `bytes`' extent: borrowAt + borrowed.size() <= bytes.size().
  OutMessage(std::span<const std::byte> bytes, size_t borrowAt, std::span<const std::byte> borrowed) noexcept
      : bytes_(bytes), borrowAt_(borrowAt), borrowed_(borrowed) {}

  size_t size() const noexcept { return bytes_.size(); }
  bool borrows() const noexcept { return !borrowed_.empty(); }
  // The message's bytes in one span, for one that borrows nothing.
  std::span<const std::byte> plain() const noexcept { return bytes_; }
  // The bytes [offset, offset + n) (clipped to size()) as pieces in order.
  Pieces pieces(size_t offset, size_t n) const noexcept {
    Pieces p;
    if (offset >= size() || n == 0) return p;
    const size_t end = offset + (n < size() - offset ? n : size() - offset);
    if (borrowed_.empty()) {
      p.at[p.count++] = bytes_.subspan(offset, end - offset);
      return p;
    }
    const size_t from = borrowAt_, to = borrowAt_ + borrowed_.size();
    if (offset < from) p.at[p.count++] = bytes_.subspan(offset, (end < from ? end : from) - offset);
    if (offset < to && end > from) {
      size_t a = offset > from ? offset : from, b = end < to ? end : to;
      p.at[p.count++] = borrowed_.subspan(a - from, b - a);
    }
    if (end > to) {
      size_t a = offset > to ? offset : to;
      p.at[p.count++] = bytes_.subspan(a, end - a);
    }
    return p;
  }
  // Copies the bytes [offset, offset + n) (clipped) to `out`; returns how many.
  size_t copy(size_t offset, size_t n, std::byte* out) const noexcept {
    size_t done = 0;
    Pieces p = pieces(offset, n);
    for (uint32_t i = 0; i < p.count; ++i) {
      std::memcpy(out + done, p.at[i].data(), p.at[i].size());
      done += p.at[i].size();
    }
    return done;
  }

 private:
  std::span<const std::byte> bytes_;
  size_t borrowAt_ = 0;
  std::span<const std::byte> borrowed_;
};

// One call started on a channel without waiting for its reply (CallChannel::startAsync). The
// request and reply buffers it was given stay where they are until it has completed; destroying
// it before then cancels it.
class ChannelCall {
 public:
  virtual ~ChannelCall() = default;
  // Makes progress without blocking past `untilNs` (monotonic; 0: only look). Empty while the
  // call runs; then the call's Status, once (the call's own deadline applies inside).
  virtual std::optional<Status> await(int64_t untilNs) noexcept = 0;
  // Completes the call now with kCancelled (its reply, if one comes, is dropped).
  virtual void cancel() noexcept = 0;
};

// A message-passing path for calls: the network transport, or an in-process channel in
// tests. `request` is the argument frame (fixed part then tail); on success `reply` holds the
// result frame (fixed part then tail). Errors, including a handler's, come back as the Status.
class CallChannel {
 public:
  virtual ~CallChannel() = default;
  virtual Status call(const InterfaceDescriptor& iface, uint32_t procedure, const OutMessage& request,
                      MessageBuffer& reply, const CallOptions& options) noexcept = 0;
  // Optional buffer reuse between calls: lend() gives `buffer` kept storage of at least
  // `bytes` (its bytes so far move along) if the channel has some, recycle() takes a finished
  // call's storage back. By default nothing is kept.
  virtual void lend(MessageBuffer& buffer, size_t bytes) noexcept {
    (void)buffer;
    (void)bytes;
  }
  virtual void recycle(MessageBuffer& buffer) noexcept { (void)buffer; }
  // call(), without waiting: the request goes out and the returned ChannelCall completes it
  // into `reply`. `request` and `reply` must stay valid and unchanged until then. By default the
  // call runs to completion here, and the ChannelCall is complete when it is returned.
  // `reclaim` is what a call that waits for an A-stack of another binding runs meanwhile (a
  // received capability's calls go through the binding it came on).
  virtual Result<std::unique_ptr<ChannelCall>> startAsync(const InterfaceDescriptor& iface, uint32_t procedure,
                                                          const OutMessage& request, MessageBuffer& reply,
                                                          const CallOptions& options,
                                                          detail::Reclaim reclaim) noexcept;
  // What a Client on this channel is when it is written into a frame as a capability
  // (runtime/capability.h): an object this process serves, one received from a peer, or the
  // null capability (an unbound Client's stand-in).
  virtual const HostedObject* hostedObject() const noexcept { return nullptr; }
  virtual const CapImport* importedCap() const noexcept { return nullptr; }
  virtual bool isNullCap() const noexcept { return false; }
  // An in-process object's own table: where ids of capabilities passed to it are kept.
  virtual CapTable* exportTable() noexcept { return nullptr; }
  // Objects of this process passed to the peer through this channel (callbacks): the id to
  // write for `object` (kClientHostedCap set), `conn` being this channel's binding; and the
  // object a peer's frame names by such an id. By default the channel carries none
  // (kUnsupported, and kBadFrame for an id).
  virtual Result<uint32_t> exportCallback(const Binding& conn, const HostedObject& object) noexcept;
  virtual Result<HostedObject> findCallback(uint32_t id, uint64_t ifaceId) const noexcept;
  // This process now holds an object of the peer that lives only as long as the channel's
  // session (a capability received through it): a channel whose peer ends silent sessions
  // keeps this one alive from now on. By default sessions do not time out.
  virtual void keepAlive() noexcept {}
  // Sessions of this channel that the peer lost (it restarted, or dropped us) so far: the
  // peer's table of the session a capability came in was lost with it, and a later session's
  // table gives out the same ids again. 0 where the peer's objects outlive its sessions.
  virtual uint32_t sessionsEnded() const noexcept { return 0; }
  // call(), for a procedure whose only variable-size result is a Data value, so that the
  // reply's tail is that value (and perhaps padding): a channel may deliver the reply's bytes
  // from `fixedBytes` on in `tail` instead of `reply`, and say so in *apart. `tail` is the
  // vector that becomes the value (RemoteCall::takeResultBytes), perhaps the caller's own
  // (lrpc::Into): resizing it to the size it already has costs nothing.
  // Worth it where the channel writes a large reply into place anyway (reassembly); by
  // default nothing is apart.
  virtual Status callApart(const InterfaceDescriptor& iface, uint32_t procedure, const OutMessage& request,
                           MessageBuffer& reply, size_t fixedBytes, std::vector<uint8_t>& tail, bool* apart,
                           const CallOptions& options) noexcept {
    (void)fixedBytes;
    (void)tail;
    *apart = false;
    return call(iface, procedure, request, reply, options);
  }
};


namespace detail {
// Copies the bytes `ref` names (checked against `tail` already) into `out`: assign, one pass,
// where resize and memcpy would zero them first.
inline void copyBytes(std::span<const std::byte> tail, VarRef ref, std::vector<uint8_t>& out) {
  const auto* p = reinterpret_cast<const uint8_t*>(tail.data() + ref.offset);
  out.assign(p, p + ref.length);
}
}  // namespace detail


// The contract between generated client code and a path: exactly these members, used in this
// order, on a RemoteCall (below, the message path) or a LocalCall (local_call.h, A-stacks):
//   status()        why the call could not start (no A-stack, dead peer), else ok
//   binding()       the binding the call goes through (capabilities in its frames name its tables)
//   args()          the fixed argument part, argsSize bytes, zeroed
//   argTail(n)      reserve n contiguous tail bytes (at most once per call); their old
//                   contents are unspecified: generated code writes every byte, gaps included
//   resultTailApart(value)  (before invoke, only where the sole variable-size result is Data)
//                   the result tail may arrive apart from the frame, straight into `value`,
//                   the vector that will hold that result; see takeResultBytes
//   invoke()        transfer control and wait for the result or an error
//   results()       the fixed result part, resultsSize bytes (valid after an ok invoke)
//   resultTail()    the result tail as the server wrote it (bounded, but unchecked content)
//   takeResultBytes(tail, ref, out)  sets `out` to the Data value `ref` names in `tail`
//                   (resultTail(), ref checked against it): a copy, or, where the tail arrived
//                   apart in `out` itself, `out` cut to the value
// plus copyTail(dst, src, n), which writes one value into the reserved tail.
template <class C>
concept Call = requires(C& call, const C& ccall, size_t n, std::byte* dst, const void* src,
                        std::span<const std::byte> tail, VarRef ref, std::vector<uint8_t>& out) {
  { ccall.status() } -> std::convertible_to<const Status&>;
  { ccall.binding() } -> std::same_as<const Binding&>;
  { call.args() } -> std::same_as<std::byte*>;
  { call.argTail(n) } -> std::same_as<Result<std::span<std::byte>>>;
  call.copyTail(dst, src, n);
  call.resultTailApart(out);
  { call.invoke() } -> std::same_as<Status>;
  { ccall.results() } -> std::same_as<const std::byte*>;
  { ccall.resultTail() } -> std::same_as<std::span<const std::byte>>;
  call.takeResultBytes(tail, ref, out);
};

class RemoteCall {
 public:
  RemoteCall(const Binding& binding, uint32_t procedure, const CallOptions& options) noexcept
      : binding_(binding), procedure_(procedure), options_(options) {
    if (procedure >= binding.iface->procedureCount) {
      status_ = Status(Errc::kInvalidArgument, "procedure out of range");
      return;
    }
    desc_ = &binding.iface->procedures[procedure];
    status_ = request_.resize(desc_->argsSize);
  }

  // Hands its buffers back to the channel for the next large call (CallChannel::recycle).
  ~RemoteCall() {
    started_.reset();  // cancels a call still in flight, which uses the buffers below
    if (binding_.channel == nullptr) return;
    binding_.channel->recycle(request_);
    binding_.channel->recycle(reply_);
  }
  RemoteCall(const RemoteCall&) = delete;
  RemoteCall& operator=(const RemoteCall&) = delete;

  const Status& status() const noexcept { return status_; }
  const Binding& binding() const noexcept { return binding_; }
  std::byte* args() noexcept { return request_.data(); }

  Result<std::span<std::byte>> argTail(size_t n) noexcept {
    if (n > UINT32_MAX - desc_->argsSize) return Status(Errc::kInvalidArgument, "argument too large");
    // A large argument takes storage the channel kept from an earlier call, if any, before
    // the resize below would allocate (and fault in) fresh pages.
    if (desc_->argsSize + n > request_.capacity() && binding_.channel != nullptr) {
      binding_.channel->lend(request_, desc_->argsSize + n);
    }
    if (Status s = request_.resizeForOverwrite(desc_->argsSize + n); !s.isOk()) return s;
    return std::span<std::byte>(request_.data() + desc_->argsSize, n);
  }
  // Copies one value of the argument tail into place, or, for the first value of at least
  // kBorrowBytes, notes where it is: the channel then sends it from the caller's memory
  // (OutMessage), and a megabyte argument is not copied once more before its first datagram
  // leaves. One per call: a datagram (at most 64 KiB) then spans at most two pieces.
  static constexpr size_t kBorrowBytes = size_t{64} << 10;
  void copyTail(std::byte* dst, const void* src, size_t n) noexcept {
    if (n >= kBorrowBytes && borrowed_.empty() && !async_) {
      borrowAt_ = static_cast<size_t>(dst - request_.data());
      borrowed_ = {static_cast<const std::byte*>(src), n};
      return;
    }
    std::memcpy(dst, src, n);
  }
  void resultTailApart(std::vector<uint8_t>& value) noexcept { tailApart_ = &value; }
  Status invoke() noexcept {
    const OutMessage request(request_.span(), borrowAt_, borrowed_);  // borrowed_ empty: borrows nothing
    Status s = tailApart_ != nullptr
                   ? binding_.channel->callApart(*binding_.iface, procedure_, request, reply_, desc_->resultsSize,
                                                 *tailApart_, &apart_, options_)
                   : binding_.channel->call(*binding_.iface, procedure_, request, reply_, options_);
    if (!s.isOk()) return s;
    if (reply_.size() < desc_->resultsSize) return Status(Errc::kBadFrame, "reply shorter than its fixed part");
    if (apart_ && reply_.size() != desc_->resultsSize) return Status(Errc::kBadFrame, "reply tail in two places");
    return s;
  }
  // The asynchronous form of invoke() (runtime/async_call.h): start() sends the call and
  // await() completes it. Such a call borrows nothing (copyTail copies every value), so the
  // caller's values are free once start() has returned.
  struct Async {};
  RemoteCall(const Binding& binding, uint32_t procedure, const CallOptions& options, Async,
             detail::Reclaim reclaim) noexcept
      : RemoteCall(binding, procedure, options) {
    async_ = true;
    reclaim_ = reclaim;
  }
  Status start() noexcept {
    Result<std::unique_ptr<ChannelCall>> r = binding_.channel->startAsync(
        *binding_.iface, procedure_, OutMessage(request_.span()), reply_, options_, reclaim_);
    if (!r.isOk()) return r.status();
    started_ = std::move(*r);
    return {};
  }
  // Empty while the call runs; then its outcome, as invoke() returns it.
  std::optional<Status> await(int64_t untilNs) noexcept {
    std::optional<Status> s = started_->await(untilNs);
    if (!s || !s->isOk()) return s;
    if (reply_.size() < desc_->resultsSize) return Status(Errc::kBadFrame, "reply shorter than its fixed part");
    return s;
  }
  void cancel() noexcept {
    if (started_) started_->cancel();
  }

  const std::byte* results() const noexcept { return reply_.data(); }
  std::span<const std::byte> resultTail() const noexcept {
    if (apart_) return std::as_bytes(std::span<const uint8_t>(*tailApart_));
    return reply_.span().subspan(desc_->resultsSize);
  }
  // A tail that arrived apart arrived in the value's own vector: it is cut to the value, no
  // copy (`ref` was checked against it; shrinking never reallocates). Anything else is copied.
  void takeResultBytes(std::span<const std::byte> tail, VarRef ref, std::vector<uint8_t>& out) {
    if (apart_ && &out == tailApart_) {
      out.erase(out.begin(), out.begin() + ref.offset);
      out.resize(ref.length);
      apart_ = false;
      return;
    }
    detail::copyBytes(tail, ref, out);
  }

 private:
  const Binding& binding_;
  uint32_t procedure_;
  CallOptions options_;
  const ProcedureDescriptor* desc_ = nullptr;
  Status status_;
  MessageBuffer request_;  // the frame; the borrowed range in it is left unwritten
  MessageBuffer reply_;
  size_t borrowAt_ = 0;
  std::span<const std::byte> borrowed_;  // the caller's value (copyTail)
  bool apart_ = false;               // the result tail is *tailApart_, not the rest of reply_
  bool async_ = false;               // started by start(), not invoke()
  std::vector<uint8_t>* tailApart_ = nullptr;  // the result value that may hold the tail (callApart)
  std::unique_ptr<ChannelCall> started_;  // start(): the call on the channel
  detail::Reclaim reclaim_;               // Async: passed on to startAsync
};
static_assert(Call<RemoteCall>);

// A handler's result value whose storage the server path took over instead of copying it
// (ServerCall::moveResultTail): the reply's bytes in that range are read from here.
class KeptResult {
 public:
  virtual ~KeptResult() = default;
  std::span<const std::byte> bytes() const noexcept { return bytes_; }
  // Once the bytes are no longer needed: the value's storage, where it is a Data value (for
  // ServerCall::keepResultStorage), else an empty vector.
  virtual std::vector<uint8_t> takeStorage() noexcept { return {}; }

 protected:
  std::span<const std::byte> bytes_;
};

namespace detail {
// Owns a moved-in std::string or std::vector and names its bytes.
template <class C>
class KeptValue final : public KeptResult {
 public:
  explicit KeptValue(C&& value) noexcept : value_(std::move(value)) {
    bytes_ = std::as_bytes(std::span(value_.data(), value_.size()));
  }
  std::vector<uint8_t> takeStorage() noexcept override {
    bytes_ = {};
    if constexpr (std::is_same_v<C, std::vector<uint8_t>>) return std::move(value_);
    return {};
  }

 private:
  C value_;
};
}  // namespace detail

// What the server side hands a generated dispatch function for one call. The argument
// spans may alias memory the client can still write: copy before checking or using.
class ServerCall {
 public:
  // The fixed argument part; its size is at least the PDL's argsSize (the runtime or
  // transport checks that before dispatch, and generated code checks it again).
  std::span<const std::byte> args() const noexcept { return args_; }
  // The argument tail; VarRefs are relative to its start.
  std::span<const std::byte> argTail() const noexcept { return argTail_; }
  // The fixed result part, resultsSize bytes. Its old contents are unspecified (the same-host
  // path does not clear it): generated code writes every field.
  std::byte* results() noexcept { return results_; }
  // Reserves n contiguous bytes of result tail (at most once per call): inline in the
  // A-stack or message when it fits, else in an out-of-band segment. Their old contents are
  // unspecified: generated code writes every byte, the alignment gaps included.
  virtual Result<std::span<std::byte>> resultTail(size_t n) noexcept = 0;
  // Writes one result value (a std::string or std::vector from the handler's results) to
  // `dst` in the reserved tail. On a path that sends the reply from memory it keeps (the
  // network), the first value of at least kKeepBytes is instead moved out of the results and
  // kept: its bytes then leave from the handler's own storage, not from a copy. Either way
  // the reply carries the same bytes; a moved-from value is left empty.
  static constexpr size_t kKeepBytes = RemoteCall::kBorrowBytes;
  template <class C>
  void moveResultTail(std::byte* dst, C& value) noexcept {
    const size_t n = value.size() * sizeof(typename C::value_type);
    if (n >= kKeepBytes && keepsResults()) {
      std::unique_ptr<KeptResult> kept(new (std::nothrow) detail::KeptValue<C>(std::move(value)));
      if (kept) {
        keepResult(dst, std::move(kept));
        return;
      }
    }
    if (n != 0) std::memcpy(dst, value.data(), n);
    if constexpr (std::is_same_v<C, std::vector<uint8_t>>) keepResultStorage(value);
  }
  // The storage a path keeps from call to call for large Data results (lrpc::resultBuffer()):
  // takeResultStorage() hands it over, empty; keepResultStorage() is given a result's storage
  // once its bytes are copied out (moveResultTail). By default the path keeps none.
  virtual std::vector<uint8_t> takeResultStorage() noexcept { return {}; }
  virtual void keepResultStorage(std::vector<uint8_t>& value) noexcept { (void)value; }
  // Waits until the first `end` bytes of the argument tail are final: a same-host client may
  // still be writing a large tail while the handler's copy-out runs (LocalCall::copyTail).
  // Generated code calls it before it reads each value; an error (the client went away, or
  // stopped writing) ends the call.
  virtual Status awaitArgTail(size_t end) noexcept {
    (void)end;
    return {};
  }
  // Whether the argument tail is memory only this server writes (the network path's request
  // buffer): then generated code hands Data arguments to the handler in place, without copy
  // "E". Same-host tails are shared with the client and always copied.
  virtual bool argTailPrivate() const noexcept { return false; }
  // A buffer this path keeps from call to call for the copy "E" of large Data arguments
  // (detail::SpareBytes), or null where it keeps none. Only the call being served uses it.
  virtual std::vector<uint8_t>* spareBytes() noexcept { return nullptr; }
  // The export table of the connection this call came on (runtime/capability.h), or null on a
  // path that carries no capabilities.
  virtual CapTable* capTable() noexcept { return nullptr; }
  // The binding that reaches objects the connection's client serves (runtime/callbacks.h), or
  // null when it has passed none.
  virtual std::shared_ptr<Binding> peerCallbacks() noexcept { return nullptr; }
  // The client asks to be called back at `where` (what its path needs to reach it: the UDP
  // transport's port), before it passes its first callback. By default refused (kUnsupported).
  virtual Status attachCallbacks(std::span<const std::byte> where) noexcept;
  // Whether the caller has given up on this call (cancelled it, dropped its Pending, or passed
  // its deadline) while the handler runs. A hint: a handler that sees it may stop early; its
  // result then goes nowhere.
  virtual bool cancelled() const noexcept { return false; }
  // For a $Lrpc.deferred method (runtime/reply.h): hands over what this path needs to write
  // the results and wake the caller later, and marks the call deferred, so that the path
  // publishes nothing when dispatch returns. The arguments stay valid only until then.
  // kUnsupported on a path that cannot wait for an answer.
  virtual Result<std::unique_ptr<DeferredCall>> defer() noexcept;
  bool deferred() const noexcept { return deferred_; }

 protected:
  ServerCall(std::span<const std::byte> args, std::span<const std::byte> argTail, std::byte* results) noexcept
      : args_(args), argTail_(argTail), results_(results) {}
  ~ServerCall() = default;

  // Whether this path takes the next large result value over (moveResultTail); if so,
  // keepResult gets it with where its bytes belong in the reserved tail.
  virtual bool keepsResults() const noexcept { return false; }
  virtual void keepResult(std::byte* dst, std::unique_ptr<KeptResult> kept) noexcept {
    (void)dst;
    (void)kept;
  }

  std::span<const std::byte> args_;
  std::span<const std::byte> argTail_;
  std::byte* results_;
  bool deferred_ = false;  // set by a path's defer()
};

namespace detail {

// The argument tail that coded values are decoded from: the tail itself where it is private
// or large, else `copy`'s snapshot of it (codec::TailCopy), taken once the client has written
// all of it.
inline Status decodableArgTail(ServerCall& call, std::span<const std::byte>& tail, codec::TailCopy& copy) noexcept {
  if (call.argTailPrivate() || tail.size() > codec::TailCopy::kMaxBytes) return {};
  if (Status s = call.awaitArgTail(tail.size()); !s.isOk()) return s;
  tail = copy.of(tail);
  return {};
}

// The copy "E" of a large Data argument goes into the buffer the call's path kept from the
// last one (ServerCall::spareBytes), and this call's buffer is kept for the next. A fresh buffer
// beyond glibc's mmap threshold (which grows to 32 MiB at most) is new pages on every call, and
// on a VM a page fault costs microseconds: copying 64 MiB into a fresh buffer takes tens of
// times as long as into a warm one (bench/README.md, "Bulk"). Generated dispatch declares one per Data
// argument, after the vector it watches: on every way out it hands that vector's buffer back.
class SpareBytes {
 public:
  static constexpr size_t kMinBytes = size_t{1} << 20;  // smaller ones come from malloc's own free lists
  SpareBytes(ServerCall& call, std::vector<uint8_t>& bytes) noexcept : spare_(call.spareBytes()), bytes_(bytes) {}
  ~SpareBytes() {
    // Keep the larger of the two (a call with two large Data arguments keeps one buffer).
    if (spare_ == nullptr || bytes_.capacity() < kMinBytes || bytes_.capacity() < spare_->capacity()) return;
    bytes_.clear();
    spare_->swap(bytes_);
  }
  SpareBytes(const SpareBytes&) = delete;
  SpareBytes& operator=(const SpareBytes&) = delete;

 private:
  std::vector<uint8_t>* spare_;
  std::vector<uint8_t>& bytes_;
};

// ServerCall::keepResultStorage on a path that keeps one buffer: `spare` takes `value`'s
// storage (left empty) when it is large and larger than what `spare` has.
inline void keepLargerStorage(std::vector<uint8_t>& spare, std::vector<uint8_t>& value) noexcept {
  if (value.capacity() < SpareBytes::kMinBytes || value.capacity() <= spare.capacity()) return;
  value.clear();
  spare.swap(value);
}

// Copy "E" of a Data argument, a chunk at a time as the client streams the tail (`ref` has
// been checked against the tail already); a large one into the kept buffer (SpareBytes).
inline Status copyArgBytes(ServerCall& call, std::span<const std::byte> tail, VarRef ref, std::vector<uint8_t>& out) {
  constexpr size_t kChunk = 64 * 1024;
  if (ref.length >= SpareBytes::kMinBytes) {
    if (std::vector<uint8_t>* spare = call.spareBytes(); spare != nullptr && spare->capacity() > out.capacity()) {
      out.swap(*spare);
    }
  }
  out.clear();
  out.reserve(ref.length);
  const auto* p = reinterpret_cast<const uint8_t*>(tail.data() + ref.offset);
  for (size_t done = 0; done < ref.length;) {
    size_t c = ref.length - done < kChunk ? ref.length - done : kChunk;
    if (Status s = call.awaitArgTail(size_t{ref.offset} + done + c); !s.isOk()) return s;
    out.insert(out.end(), p + done, p + done + c);
    done += c;
  }
  return {};
}

// The binding a generated Foo::Client keeps: `binding` when it is for `iface` or for an
// interface that extends it at the start of its PDL (isA); otherwise (none,
// or one for another interface) a stand-in whose remote channel answers every call with
// kBindingRejected naming both, so that a client's first statement can stay the test of the
// remote bit, with no null check.
std::shared_ptr<Binding> checkedBinding(std::shared_ptr<Binding> binding, const InterfaceDescriptor& iface);

// The call whose handler this thread runs (callCancelled()), set by the paths around dispatch.
class CurrentCall {
 public:
  explicit CurrentCall(ServerCall& call) noexcept;
  ~CurrentCall();
  CurrentCall(const CurrentCall&) = delete;
  CurrentCall& operator=(const CurrentCall&) = delete;

 private:
  ServerCall* outer_;
};

// Turns the exception a handler threw into the status the caller sees. Call only from
// inside a catch block (it rethrows the current exception to read it).
Status handlerThrew(const char* method) noexcept;

}  // namespace detail

}  // namespace lrpc

#include "runtime/local_call.h"
#include "runtime/capability.h"
