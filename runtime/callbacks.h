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
// A callback that serves a call the client is waiting for runs on the thread that waits (as
// Binder runs a transaction's nested calls), so that it costs no third thread: the server marks
// it with the A-stack of the call it serves, and the waiting thread looks for such calls while
// it spins (runtime/astack_format.md, "Callbacks run by the waiting caller"). Any other
// callback, and one whose caller is not spinning, runs on the callback binding's own threads.
// Either way a server calling back while its client waits (a re-entrant call) completes. When
// either process dies or the binding ends, the socketpair closes and every object is released.
// Internal: neither installed for users nor part of the generated-code contract.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "runtime/base/fd.h"
#include "runtime/base/status.h"
#include "runtime/capability.h"

namespace lrpc {

class CapTable;
class RegionLayout;

namespace detail {

class LazyDeadline;  // runtime/transfer.h

// What a callback binding serves: the tunnel, and nothing else.
extern const InterfaceDescriptor kCallbackInterface;

// Where the callers of the forward binding say that they run their calls' callbacks: the
// return blocks of its region (ReturnControl::guestSeq), read by the callback threads.
struct GuestSeats {
  const std::byte* base = nullptr;
  const RegionLayout* layout = nullptr;
  // Whether a caller waits on A-stack `origin` - 1 and runs its callbacks (a bad index: no).
  bool taken(uint16_t origin) const noexcept;
};

// The forward call the calling thread serves (set around dispatch by a binding that has its
// client's callbacks): what the callbacks it makes name as their origin.
class CallOrigin {
 public:
  CallOrigin(const void* conn, uint16_t origin, const std::atomic<uint32_t>* guestSeq, uint32_t seq) noexcept;
  ~CallOrigin();
  CallOrigin(const CallOrigin&) = delete;
  CallOrigin& operator=(const CallOrigin&) = delete;
  static const CallOrigin* current() noexcept;
  // current(), if it is a call of the forward binding whose server side is `conn`; else null.
  static const CallOrigin* within(const void* conn) noexcept {
    const CallOrigin* o = current();
    return o != nullptr && o->conn == conn ? o : nullptr;
  }
  // Whether the call's caller still waits for it spinning, running the callbacks it causes.
  bool guestWaits() const noexcept {
    // Relaxed: a look at the caller's word; a doorbell fences before it (ringReverse).
    return guestSeq->load(std::memory_order_relaxed) == seq;
  }

  const void* const conn;                       // the forward binding's server side
  const uint16_t origin;                        // 1 + the A-stack index of the call
  const std::atomic<uint32_t>* const guestSeq;  // that A-stack's ReturnControl::guestSeq
  const uint32_t seq;                           // the call's sequence number

 private:
  const CallOrigin* outer_;
};

// The reverse direction of one same-host binding, in the process that imported it.
class CallbackHost {
 public:
  // Starts serving one end of a fresh socketpair; `peerEnd` gets the other, for the peer's
  // clerk. At most `maxCapabilities` objects may be passed at once (kResourceExhausted beyond).
  // `seats` are the forward binding's return blocks.
  static Result<std::unique_ptr<CallbackHost>> start(uint32_t maxCapabilities, OwnedFd* peerEnd, GuestSeats seats);
  // Ends the callback binding (the peer's calls on our objects then fail with kPeerDied), joins
  // its threads and drops every object.
  ~CallbackHost();
  CallbackHost(const CallbackHost&) = delete;
  CallbackHost& operator=(const CallbackHost&) = delete;

  // The objects the peer may call. Closed (adds fail) once the peer has gone.
  CapTable& table() noexcept;

  // A thread waiting for a call of the forward binding runs the callbacks it causes: between
  // enterGuest() (false once the peer has gone: nothing to run) and leaveGuest(), which the
  // callback binding's teardown waits for, serveGuest(origin) runs one waiting call marked
  // with `origin`, if there is one.
  bool enterGuest() noexcept;
  void leaveGuest() noexcept;
  // `arm`, if given, is fixed just before the call runs (its time counts to the guest's call).
  bool serveGuest(uint16_t origin, LazyDeadline* arm = nullptr) noexcept;

 private:
  struct Parts;
  explicit CallbackHost(std::unique_ptr<Parts> parts) noexcept;
  std::unique_ptr<Parts> parts_;
};

}  // namespace detail
}  // namespace lrpc
