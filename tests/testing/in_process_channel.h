// A test double for the network path: a CallChannel that runs an interface's generated
// dispatch in the same process over a ServerCall built from the request bytes. It moves the
// exact frame bytes a transport would (fixed part then tail, both ways), so stub tests check
// the real layout and validation without sockets. Hooks let a test read or corrupt the bytes
// on their way to the server (request) and back to the client (reply).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <span>
#include <vector>

#include "runtime/stub_support.h"

namespace lrpc::testing {

// What the double's reused storage holds before the generated code writes it (see lend()).
inline constexpr std::byte kStale{0xEE};

// A ServerCall over caller-owned argument bytes, with private result storage. Results are
// kept apart from the result tail so that reserving the tail never moves results().
class BufferServerCall final : public ServerCall {
 public:
  BufferServerCall(std::span<const std::byte> args, std::span<const std::byte> argTail, size_t resultsSize,
                   size_t maxResultTail = size_t{64} << 20)
      : ServerCall(args, argTail, nullptr), results(resultsSize), maxResultTail_(maxResultTail) {
    results_ = results.data();
  }

  Result<std::span<std::byte>> resultTail(size_t n) noexcept override {
    if (tailTaken_) return Status(Errc::kInvalidArgument, "resultTail reserved twice");
    if (n > maxResultTail_) return Status(Errc::kResourceExhausted, "result tail too large");
    tailTaken_ = true;
    try {
      // Stale bytes, as a reused reply buffer holds: the generated code must write them all.
      tail.assign(n, kStale);
    } catch (const std::bad_alloc&) {
      return Status(Errc::kResourceExhausted, "result tail allocation failed");
    }
    return std::span<std::byte>(tail.data(), tail.size());
  }

  std::vector<std::byte> results;  // resultsSize bytes, zeroed
  std::vector<std::byte> tail;     // what the generated code reserved and wrote

 private:
  size_t maxResultTail_;
  bool tailTaken_ = false;
};

// Dispatches every call to `server` (a Foo::Server*, as a void*) through iface.dispatch.
class InProcessChannel final : public CallChannel {
 public:
  explicit InProcessChannel(void* server) noexcept : server_(server) {}

  Status call(const InterfaceDescriptor& iface, uint32_t procedure, const OutMessage& request, MessageBuffer& reply,
              const CallOptions&) noexcept override {
    ++calls;
    if (procedure >= iface.procedureCount) return Status(Errc::kBadFrame, "procedure out of range");
    const ProcedureDescriptor& d = iface.procedures[procedure];
    try {
      // The server gets its own copy, as a network receive would give it.
      lastRequest.resize(request.size());
      request.copy(0, request.size(), lastRequest.data());
      lastBorrowed = request.borrows();
      if (tamperRequest) tamperRequest(lastRequest);
      if (lastRequest.size() < d.argsSize) return Status(Errc::kBadFrame, "request shorter than its fixed part");
      std::span<const std::byte> in(lastRequest);
      BufferServerCall sc(in.first(d.argsSize), in.subspan(d.argsSize), d.resultsSize);
      Status s = iface.dispatch(server_, procedure, sc);
      if (!s.isOk()) return s;
      if (Status r = reply.resize(sc.results.size() + sc.tail.size()); !r.isOk()) return r;
      if (!sc.results.empty()) std::memcpy(reply.data(), sc.results.data(), sc.results.size());
      if (!sc.tail.empty()) std::memcpy(reply.data() + sc.results.size(), sc.tail.data(), sc.tail.size());
      if (tamperReply) tamperReply(reply);
      return {};
    } catch (const std::bad_alloc&) {
      return Status(Errc::kResourceExhausted, "in-process channel out of memory");
    }
  }

  // callApart as a channel that reassembles large replies does it: a reply tail of at least
  // `apartFrom` bytes comes back in `tail` (where noted in lastApart), the frame alone in
  // `reply` (plus `apartLeftover` bytes of the tail, as a broken channel might leave them).
  Status callApart(const InterfaceDescriptor& iface, uint32_t procedure, const OutMessage& request,
                   MessageBuffer& reply, size_t fixedBytes, std::vector<uint8_t>& tail, bool* apart,
                   const CallOptions& options) noexcept override {
    *apart = false;
    ++apartAsked;
    Status s = call(iface, procedure, request, reply, options);
    if (!s.isOk() || reply.size() < fixedBytes || reply.size() - fixedBytes < apartFrom) return s;
    try {
      const auto* t = reinterpret_cast<const uint8_t*>(reply.data() + fixedBytes);
      tail.assign(t, t + (reply.size() - fixedBytes));
    } catch (const std::bad_alloc&) {
      return Status(Errc::kResourceExhausted, "in-process channel out of memory");
    }
    if (Status r = reply.resize(fixedBytes + apartLeftover); !r.isOk()) return r;
    lastApart = tail.data();
    *apart = true;
    return {};
  }

  // Storage as a channel that keeps buffers between calls lends it: full of an earlier
  // call's bytes (kStale), which the generated code must overwrite, gaps included.
  void lend(MessageBuffer& buffer, size_t bytes) noexcept override {
    std::unique_ptr<std::byte[]> storage(new (std::nothrow) std::byte[bytes]);
    if (!storage) return;
    std::memset(storage.get(), static_cast<int>(kStale), bytes);
    buffer.adoptHeap(std::move(storage), bytes);
  }

  int calls = 0;
  int apartAsked = 0;                  // calls that came through callApart
  size_t apartFrom = SIZE_MAX;         // SIZE_MAX: never apart
  size_t apartLeftover = 0;
  const uint8_t* lastApart = nullptr;  // the tail vector's storage of the last call apart
  bool lastBorrowed = false;  // the last request sent a value from the caller's memory
  std::vector<std::byte> lastRequest;                          // after tamperRequest
  std::function<void(std::vector<std::byte>&)> tamperRequest;  // may change or resize the request
  std::function<void(MessageBuffer&)> tamperReply;              // may change or resize the reply

 private:
  void* server_;
};

// Answers every call with the same reply bytes, as a hostile server would (fuzz targets).
class ReplayChannel final : public CallChannel {
 public:
  explicit ReplayChannel(std::span<const std::byte> reply) : reply_(reply) {}
  Status call(const InterfaceDescriptor&, uint32_t, const OutMessage&, MessageBuffer& reply,
              const CallOptions&) noexcept override {
    if (Status s = reply.resize(reply_.size()); !s.isOk()) return s;
    if (!reply_.empty()) std::memcpy(reply.data(), reply_.data(), reply_.size());
    return {};
  }

 private:
  std::span<const std::byte> reply_;
};

// A remote-path binding of `Iface` whose calls run `server`'s dispatch in process. The channel
// is returned too, for the hooks; the binding keeps it alive.
template <class Iface>
struct InProcess {
  std::shared_ptr<Binding> binding;
  InProcessChannel* channel;
};

template <class Iface>
InProcess<Iface> bindInProcess(typename Iface::Server& server) {
  auto channel = std::make_shared<InProcessChannel>(static_cast<void*>(&server));
  InProcessChannel* raw = channel.get();
  auto binding = std::make_shared<Binding>(Iface::kDescriptor, static_cast<CallChannel*>(raw), std::move(channel));
  return {std::move(binding), raw};
}

}  // namespace lrpc::testing
