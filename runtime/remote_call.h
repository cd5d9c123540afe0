// The message path of a call: a RemoteCall builds the frame in a MessageBuffer and hands it to
// a CallChannel (the UDP transport, or a capability's channel), which carries it and returns
// the reply. The generated stub's copy code is the same as on the A-stack path: both model the
// Call concept of runtime/contract.h.
#pragma once

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

#include "runtime/base/bulk_copy.h"
#include "runtime/base/status.h"
#include "runtime/codec.h"
#include "runtime/contract.h"
#include "runtime/pending.h"

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
      detail::bulkCopy(fresh.get(), data(), size_);
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
    detail::bulkCopy(storage.get(), data(), size_);
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
      detail::bulkCopy(out + done, p.at[i].data(), p.at[i].size());
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
    detail::bulkCopy(dst, src, n);
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
  Status takeResultBytes(std::span<const std::byte> tail, VarRef ref, std::vector<uint8_t>& out) {
    if (apart_ && &out == tailApart_) {
      out.erase(out.begin(), out.begin() + ref.offset);
      out.resize(ref.length);
      apart_ = false;
      return {};
    }
    detail::copyBytes(tail, ref, out);
    return {};
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

}  // namespace lrpc
