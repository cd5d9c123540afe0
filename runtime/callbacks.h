// Callbacks: objects a client serves to the server it is bound to (a Foo::Client made with
// Foo::Client::serve, passed as an argument), on the same host.
//
// Calls from the server to such an object travel the other way over A-stacks of their own:
// the first time a binding carries one, its client makes a socketpair, serves one end with a
// clerk of its own (exactly as an Exporter serves a binding: a sealed A-stack region, a server
// thread per A-stack in use), and hands the other end to the server's clerk (kCallbacks,
// runtime/protocol.h), which imports a "callback binding" over it. That binding has one
// procedure, the capability tunnel, and its export table holds the objects this process passed
// to the peer; their ids travel with kClientHostedCap set (runtime/capability.h).
//
// So a server calling back while its client waits for it (a re-entrant call) completes: the
// callback runs on the client's callback thread, not on the thread that waits. When either
// process dies or the binding ends, the socketpair closes and every object is released.
// Internal: neither installed for users nor part of the generated-code contract.
#pragma once

#include <cstdint>
#include <memory>

#include "runtime/base/fd.h"
#include "runtime/base/status.h"
#include "runtime/stub_support.h"

namespace lrpc {

class CapTable;

namespace detail {

// What a callback binding serves: the tunnel, and nothing else.
extern const InterfaceDescriptor kCallbackInterface;

// The reverse direction of one same-host binding, in the process that imported it.
class CallbackHost {
 public:
  // Starts serving one end of a fresh socketpair; `peerEnd` gets the other, for the peer's
  // clerk. At most `maxCapabilities` objects may be passed at once (kResourceExhausted beyond).
  static Result<std::unique_ptr<CallbackHost>> start(uint32_t maxCapabilities, OwnedFd* peerEnd);
  // Ends the callback binding (the peer's calls on our objects then fail with kPeerDied), joins
  // its threads and drops every object.
  ~CallbackHost();
  CallbackHost(const CallbackHost&) = delete;
  CallbackHost& operator=(const CallbackHost&) = delete;

  // The objects the peer may call. Closed (adds fail) once the peer has gone.
  CapTable& table() noexcept;

 private:
  struct Parts;
  explicit CallbackHost(std::unique_ptr<Parts> parts) noexcept;
  std::unique_ptr<Parts> parts_;
};

}  // namespace detail
}  // namespace lrpc
