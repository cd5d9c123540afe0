// Capabilities as values (idl/README.md, "Capabilities"): a Foo::Client passed as an argument
// or returned as a result, on both paths, with no new import, socket or handshake.
//
// A capability travels in a frame as a uint32 naming an entry of the export table that the
// server side keeps per connection (a same-host binding, a network session): 0 is the null
// capability; bits 0-19 hold the slot + 1 and bits 20-30 its generation, so an id kept after
// its release no longer names anything; bit 31 marks one hosted by the client side of a
// same-host binding (a callback: runtime/callbacks.h), an id in the client's own table.
//
// A call on a received capability travels through the connection's own binding, as a call of
// the binding's last procedure (the tunnel the generator adds to every interface whose methods
// carry capabilities): its arguments are the target's id, interface and procedure, and the
// inner frame, exactly as a direct call would lay it out; its results are the inner reply. On
// the same host the received capability's binding is a local one (Binding::capId): the stub's
// LocalCall writes the inner frame into the tunnel A-stack's argument tail itself and reads the
// reply in its result tail. Over the network it is a CapChannel, which builds the tunnel call.
// The server looks the id up in the connection's table, checks the interface, and runs the
// object's generated dispatch over the inner frame where it lies (the dispatch takes its copy
// "E" there, as from a binding's own A-stack), its reply written in place as the tunnel's results.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "runtime/codec.h"
#include "runtime/remote_call.h"
#include "runtime/server_call.h"

namespace lrpc {

inline constexpr uint32_t kNullCap = 0;
inline constexpr uint32_t kClientHostedCap = 0x80000000u;

// An object a process serves: a Foo::Server (as void*, as DispatchFn takes it) and its descriptor.
struct HostedObject {
  const InterfaceDescriptor* iface = nullptr;
  std::shared_ptr<void> server;
};

// A capability received from a peer: the binding its calls go through and its id there.
struct CapImport {
  std::shared_ptr<Binding> root;
  uint32_t id = kNullCap;
  // root's CallChannel::sessionsEnded() when it came: an id names an object only in the
  // session that gave it.
  uint32_t sessionsEnded = 0;
};


namespace detail {

inline constexpr uint32_t kReleaseCap = UINT32_MAX;
// The tunnel's other control call: the inner frame says where the server calls this client's
// objects back (ServerCall::attachCallbacks); no object is named.
inline constexpr uint32_t kAttachCallbacks = UINT32_MAX - 1;

// Client side: tells the server at the other end of `conn` where to call back (kAttachCallbacks).
Status attachCallbacks(const Binding& conn, std::span<const std::byte> where, const CallOptions& options) noexcept;


// ---- what generated code calls ----

// Client side: the binding for id `id` that the server returned in a frame of a call through `via`.
Result<std::shared_ptr<Binding>> capFromFrame(const Binding& via, uint32_t id, const InterfaceDescriptor& iface) noexcept;
// Server side: the binding for argument id `id` (an object this connection exported).
Result<std::shared_ptr<Binding>> capArg(ServerCall& call, uint32_t id, const InterfaceDescriptor& iface) noexcept;
// Server side: exports `cap` (a Client made with Foo::Client::serve) and gives its id.
Result<uint32_t> capResult(ServerCall& call, const std::shared_ptr<Binding>& cap) noexcept;
// Server side: runs one tunnelled call (the generated dispatch's case for the tunnel).
Status serveCapCall(ServerCall& call) noexcept;

// Set around a call on a received capability whose root channel counts its sessions
// (CallChannel::sessionsEnded): the count the capability's id belongs to. The root channel
// takes it once the call has its place there (UdpChannel::begin) and fails the call if a
// session has ended since, so that a session lost while the call waited to be sent never
// carries the old id to a new session, where it may name another object.
class ExpectSession {
 public:
  ExpectSession(const CallChannel* channel, uint32_t sessionsEnded) noexcept;
  ~ExpectSession();
  ExpectSession(const ExpectSession&) = delete;
  ExpectSession& operator=(const ExpectSession&) = delete;

 private:
  const CallChannel* channel_;
  uint32_t sessionsEnded_;
  ExpectSession* outer_;
  bool taken_ = false;
  friend std::optional<uint32_t> takeExpectedSession(const CallChannel* channel) noexcept;
};
// For a root channel starting a call: the session count this thread's call expects if it is
// one on a capability of `channel` (then cleared, so the calls it makes meanwhile are not).
std::optional<uint32_t> takeExpectedSession(const CallChannel* channel) noexcept;
// The error of a call on a capability whose session has ended.
Status capSessionEnded() noexcept;
// Foo::Client::serve: a binding whose calls run `object`'s dispatch in this process.
std::shared_ptr<Binding> serveInProcess(HostedObject object);

// The capability codecs generated code gives runtime/codec.h for values that may hold
// capabilities: the client's (ids of the binding `via` calls through) and the server's.
class ClientCaps final : public codec::CapCodec {
 public:
  explicit ClientCaps(const Binding& via) noexcept : via_(via) {}
  ~ClientCaps();
  ClientCaps(const ClientCaps&) = delete;
  ClientCaps& operator=(const ClientCaps&) = delete;
  // The id to write for `cap` (a parameter of the call).
  Result<uint32_t> toFrame(const std::shared_ptr<Binding>& cap) noexcept;
  uint32_t out(const std::shared_ptr<Binding>& cap) noexcept override;
  Result<std::shared_ptr<Binding>> in(uint32_t id, const InterfaceDescriptor& iface) noexcept override;

 private:
  const Binding& via_;
  // Our own objects this call passed (callbacks): the server may return one after it has let
  // go of it, so that only this call still knows the id. The first in place (most calls pass
  // one at most, and a call should not allocate for it), any others in sentMore_.
  std::pair<uint32_t, HostedObject> sentFirst_{kNullCap, {}};
  std::vector<std::pair<uint32_t, HostedObject>> sentMore_;
  // Ids this call added to an in-process object's table, dropped when the call is over (the
  // object's dispatch made its own reference to each).
  CapTable* inProcess_ = nullptr;
  std::vector<uint32_t> added_;
};

class ServerCaps final : public codec::CapCodec {
 public:
  explicit ServerCaps(ServerCall& call) noexcept : call_(call) {}
  uint32_t out(const std::shared_ptr<Binding>& cap) noexcept override {
    Result<uint32_t> id = capResult(call_, cap);
    if (id.isOk()) return *id;
    if (error.isOk()) error = id.status();
    return kNullCap;
  }
  Result<std::shared_ptr<Binding>> in(uint32_t id, const InterfaceDescriptor& iface) noexcept override {
    return capArg(call_, id, iface);
  }

 private:
  ServerCall& call_;
};

}  // namespace detail
}  // namespace lrpc

// After ClientCaps, whichever of this header and stub_support.h comes first.
#include "runtime/async_call.h"
