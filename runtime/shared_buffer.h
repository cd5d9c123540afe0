// Zero-copy bulk arguments on the same host: the caller writes its payload straight into the
// out-of-band segment the server reads, instead of building it in private memory and having
// the stub copy it in.
//
//   auto buf = lrpc::SharedBuffer::allocate(*client.binding(), Curves::kSink, n, options);
//   if (!buf.isOk()) ...                              // e.g. a remote binding: kUnsupported
//   produce(buf->bytes());                            // read the file, fill the tensor, ... in place
//   Curves::SinkArgsFrame frame{{0, uint32_t(n)}};    // the generated frame: VarRefs into bytes()
//   std::memcpy(buf->args(), &frame, sizeof frame);
//   lrpc::Status s = buf->invoke();                   // then results() / resultTail(), as a LocalCall
//
// A payload produced in pieces can be handed over while it is produced: start() publishes the
// call and ready(n) tells the server how much is final, so the server's copy overlaps the
// production (see start()).
//
// Copies of an n-byte argument: through a generated stub, two (the stub copies the caller's
// bytes into the segment; the server's dispatch copies them out, LRPC's copy "E"). Through a
// SharedBuffer, one: the copy "E", which must stay (below). Results come back as in any
// LocalCall: resultTail() is a view of the result segment, readable in place.
//
// What a SharedBuffer is: a LocalCall (runtime/local_call.h) that has taken one A-stack of the
// procedure and reserved its argument tail up front, inline in the A-stack when it fits, else
// in the A-stack's out-of-band argument segment: a sealed memfd the server created and both
// processes map, kept per A-stack and reused while large enough (so a stream of same-size
// buffers costs no system call after the first). It holds that A-stack from allocate() until
// it is destroyed; the procedure's other A-stacks serve other calls meanwhile.
//
// Trust. The bytes live in memory the server maps read-write:
//  * The server cannot be stopped from reading or changing them at any time (before, during
//    and after the call). Do not put anything there the server may not see, and do not read
//    back from bytes() expecting what you wrote.
//  * The server is protected from the client as with any call: its generated dispatch copies
//    the arguments out before checking them, so a client thread that keeps writing during
//    invoke() changes nothing the server checked. That copy is why "zero-copy" here means one
//    copy, not none.
//  * resultTail() points into the server's result segment (or the A-stack): a hostile server
//    can change it while you read it. Copy it out before validating it, as generated stubs do,
//    unless you trust the server.
//  * bytes(), args(), results() and resultTail() are valid until the SharedBuffer is destroyed
//    (the A-stack and its segments go back for reuse then), and only after an ok allocate().
//
// Same host only: a remote binding has no shared memory (kUnsupported); the caller falls back
// to the generated stub, which sends its argument in place from the caller's own memory.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <span>

#include "runtime/base/status.h"
#include "runtime/local_call.h"

namespace lrpc {

class SharedBuffer {
 public:
  // Takes a free A-stack of `procedure` (waiting as a call would, within options.timeout) and
  // reserves `bytes` of argument tail in shared memory. kUnsupported for a remote binding,
  // kResourceExhausted beyond the server's ExporterOptions::maxOutOfBandBytes.
  static Result<SharedBuffer> allocate(const Binding& binding, uint32_t procedure, size_t bytes,
                                       const CallOptions& options = {}) {
    if (binding.remote) return Status(Errc::kUnsupported, "a SharedBuffer needs a same-host binding");
    if (binding.capId != 0) return Status(Errc::kUnsupported, "a SharedBuffer needs an imported binding, not a capability");
    if (procedure < binding.iface->procedureCount && !binding.iface->procedures[procedure].variable) {
      return Status(Errc::kInvalidArgument, "procedure has no variable-size argument to put in a SharedBuffer");
    }
    auto call = std::make_unique<LocalCall>(binding, procedure, options);
    if (!call->status().isOk()) return call->status();
    // A call's stub writes every field; a SharedBuffer's user may not, so the part starts at 0.
    std::memset(call->args(), 0, binding.iface->procedures[procedure].argsSize);
    Result<std::span<std::byte>> tail = call->argTail(bytes);
    if (!tail.isOk()) return tail.status();
    return SharedBuffer(std::move(call), *tail);
  }

  SharedBuffer(SharedBuffer&&) noexcept = default;
  SharedBuffer& operator=(SharedBuffer&&) noexcept = default;

  // The argument tail: write the payload here. VarRefs in args() are relative to its start.
  std::span<std::byte> bytes() const noexcept { return bytes_; }
  // The fixed argument part (the generated FooArgsFrame), zeroed.
  std::byte* args() noexcept { return call_->args(); }
  // Optional, for a payload produced piece by piece: publishes the call before the payload is
  // written, so that the server's copy "E" of each piece overlaps the production of the next
  // (as the generated stubs do for an argument of LocalCall::kStreamBytes or more). args()
  // must be final before start(); then ready(n) after each piece (the first n bytes of bytes()
  // are final; counts only grow), and invoke() to wait for the result (it marks every byte
  // final). Bytes written after ready() counted them may or may not be seen. Without start(),
  // the call is published by invoke() with the whole payload final. A payload inline in the
  // A-stack (small) is not streamed: start() then returns false and ready() does nothing.
  // Once started, the server waits for the count to move for at most 1 s at a time
  // (astack_format.md, "Streaming"): a producer slower than that fails the call (kBadFrame),
  // so produce first and invoke() when pieces may take that long.
  bool start() noexcept { return !invoked_ && call_->streamTail(); }
  void ready(size_t n) noexcept { call_->readyTail(n); }

  // Runs the call; at most once per SharedBuffer (the A-stack serves one call per allocate()).
  Status invoke() noexcept {
    if (invoked_) return Status(Errc::kInvalidArgument, "SharedBuffer invoked twice");
    invoked_ = true;
    return call_->invoke();
  }
  // After an ok invoke(): the fixed results and the result tail, as the server wrote them.
  const std::byte* results() const noexcept { return call_->results(); }
  std::span<const std::byte> resultTail() const noexcept { return call_->resultTail(); }

 private:
  SharedBuffer(std::unique_ptr<LocalCall> call, std::span<std::byte> bytes) noexcept
      : call_(std::move(call)), bytes_(bytes) {}

  std::unique_ptr<LocalCall> call_;  // on the heap: a LocalCall owns its A-stack and never moves
  std::span<std::byte> bytes_;
  bool invoked_ = false;
};

}  // namespace lrpc
