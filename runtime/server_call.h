// The server side of a call as a generated dispatch function sees it: a ServerCall (the
// arguments where they arrived, room for the results, deferral), and the helpers the dispatch
// uses to take its private copy of the arguments (copy "E") and to report a handler's failure.
// The same-host runtime and the network transport each implement ServerCall.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "runtime/base/bulk_copy.h"
#include "runtime/base/status.h"
#include "runtime/codec.h"
#include "runtime/contract.h"
#include "runtime/pending.h"
#include "runtime/remote_call.h"

namespace lrpc {

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
  // kept: its bytes then leave from the handler's own storage, not from a copy. The same-host
  // path keeps one of kStreamBytes or more where the client allows it, and copies it into place
  // after it has published the return, while the client copies it out. Either way the reply
  // carries the same bytes; a moved-from value is left empty.
  static constexpr size_t kKeepBytes = RemoteCall::kBorrowBytes;
  template <class C>
  void moveResultTail(std::byte* dst, C& value) noexcept {
    const size_t n = value.size() * sizeof(typename C::value_type);
    if (n >= kKeepBytes && keepsResults(n)) {
      std::unique_ptr<KeptResult> kept(new (std::nothrow) detail::KeptValue<C>(std::move(value)));
      if (kept) {
        keepResult(dst, std::move(kept));
        return;
      }
    }
    detail::bulkCopy(dst, value.data(), n);
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
  // For a $Lrpc.deferred method (runtime/pending.h): hands over what this path needs to write
  // the results and wake the caller later, and marks the call deferred, so that the path
  // publishes nothing when dispatch returns. The arguments stay valid only until then.
  // kUnsupported on a path that cannot wait for an answer.
  virtual Result<std::unique_ptr<DeferredCall>> defer() noexcept;
  bool deferred() const noexcept { return deferred_; }
  // The copies "E" of this call's Data arguments (detail::copyArgBytes), which
  // lrpc::takeArgument may hand to the handler instead of copying them again.
  void noteArgCopy(std::vector<uint8_t>* copy) noexcept {
    if (argCopyCount_ < argCopies_.size()) argCopies_[argCopyCount_++] = copy;
  }
  // The copy whose bytes `bytes` names exactly, taken out of the list, or null.
  std::vector<uint8_t>* takeArgCopy(std::span<const uint8_t> bytes) noexcept {
    if (bytes.empty()) return nullptr;
    for (uint8_t i = 0; i < argCopyCount_; ++i) {
      std::vector<uint8_t>*& c = argCopies_[i];
      if (c != nullptr && c->data() == bytes.data() && c->size() == bytes.size()) {
        return std::exchange(c, nullptr);
      }
    }
    return nullptr;
  }

 protected:
  ServerCall(std::span<const std::byte> args, std::span<const std::byte> argTail, std::byte* results) noexcept
      : args_(args), argTail_(argTail), results_(results) {}
  ~ServerCall() = default;
  // Readies a call object kept between calls (AStackServerCall) for its next call.
  void restart(std::span<const std::byte> argTail) noexcept {
    argTail_ = argTail;
    deferred_ = false;
    argCopyCount_ = 0;
  }

  // Whether this path takes the next large result value, of n bytes, over (moveResultTail); if
  // so, keepResult gets it with where its bytes belong in the reserved tail.
  virtual bool keepsResults(size_t n) const noexcept {
    (void)n;
    return false;
  }
  virtual void keepResult(std::byte* dst, std::unique_ptr<KeptResult> kept) noexcept {
    (void)dst;
    (void)kept;
  }

  std::span<const std::byte> args_;
  std::span<const std::byte> argTail_;
  std::byte* results_;
  bool deferred_ = false;  // set by a path's defer()
  // Vectors of the generated dispatch's frame, valid while its handler runs; a call with more
  // Data arguments than this has the rest copied again by takeArgument. Only the first
  // argCopyCount_ are set: a call with no Data argument, Null's, writes none of them.
  std::array<std::vector<uint8_t>*, 4> argCopies_;
  uint8_t argCopyCount_ = 0;
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
  if (out.capacity() < ref.length && ref.length >= SpareBytes::kMinBytes) {
    // A handler that hands its argument back as its result (lrpc::takeArgument) leaves this
    // path's one large buffer as the last result's storage: take that, keep the smaller.
    std::vector<uint8_t> last = call.takeResultStorage();
    if (last.capacity() > out.capacity()) out.swap(last);
    call.keepResultStorage(last);
  }
  out.clear();
  out.reserve(ref.length);
  call.noteArgCopy(&out);
  const auto* p = reinterpret_cast<const uint8_t*>(tail.data() + ref.offset);
  for (size_t done = 0; done < ref.length;) {
    size_t c = ref.length - done < kChunk ? ref.length - done : kChunk;
    if (Status s = call.awaitArgTail(size_t{ref.offset} + done + c); !s.isOk()) return s;
    detail::appendBulk(out, p + done, c);
    done += c;
  }
  return {};
}

// Per thread: the call whose handler this thread runs (callCancelled()). A handler runs on the
// thread that dispatched it, and a nested dispatch (a capability call inside a call) restores
// the outer one when it is done.
inline constinit thread_local ServerCall* tlsCurrentCall = nullptr;

// Sets tlsCurrentCall around a dispatch. Inline: every call on every path sets and restores it.
class CurrentCall {
 public:
  explicit CurrentCall(ServerCall& call) noexcept : outer_(tlsCurrentCall) { tlsCurrentCall = &call; }
  ~CurrentCall() { tlsCurrentCall = outer_; }
  CurrentCall(const CurrentCall&) = delete;
  CurrentCall& operator=(const CurrentCall&) = delete;

 private:
  ServerCall* outer_;
};

// Turns the exception a handler threw into the status the caller sees. Call only from
// inside a catch block (it rethrows the current exception to read it).
Status handlerThrew(const char* method) noexcept;

// kBadFrame for a call of a procedure number `iface` does not have (a generated dispatch's
// default case).
Status noProcedure(const char* iface, uint32_t procedure) noexcept;

}  // namespace detail

}  // namespace lrpc
