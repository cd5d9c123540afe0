// The contract between capnpc-lrpc's generated code and lrpc, and all a generated header
// includes: the types the generated declarations name (descriptors, the binding, per-call
// options, the values a struct holds), and through pending.h what an async call returns. The
// calls themselves, their copy code and the codec's templates are compiled into the generated
// source file (foo.lrpc.cc, which includes runtime/stub_support.h), so user code that includes
// foo.lrpc.h reaches none of the runtime: no A-stacks, shared memory, sockets, locks or clocks.
//
//  * Frame layout. A procedure's argument frame (and its result frame) is a fixed part of
//    exactly ProcedureDescriptor::argsSize (resultsSize) bytes, laid out by the generator
//    with natural alignment, little-endian, followed by a tail. Variable-size values (Text,
//    Data, List) sit in the tail and are named from the fixed part by a VarRef (offset from
//    the start of the tail, length in bytes). The same bytes are the A-stack contents on the
//    same host and the datagram payload on the network: there is one layout.
//
//  * Client side. A generated client method tests the binding's remote bit first, then runs
//    the same straight-line copy code over either a LocalCall (A-stacks, runtime/local_call.h)
//    or a RemoteCall (a message over a CallChannel, e.g. the UDP transport). Both model the
//    Call concept (runtime/stub_support.h).
//
//  * Server side. The runtime or the transport hands the generated dispatch function a
//    ServerCall whose argument spans may point into memory the client can still write
//    (a shared A-stack): generated code copies every argument out before checking or using it.
#pragma once

#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "runtime/base/duration.h"
#include "runtime/base/status.h"
#include "runtime/pending.h"

// The one version of everything lrpc shares across a process boundary or with generated code:
// the frame layout above, the A-stack region and the same-host socket protocol
// (runtime/astack_format.md), the UDP wire format (transport/wire_format.md), the secure
// handshake's messages (transport/secure/README.md) and this contract. A change to any of them
// moves it on, so a peer, a region or a generated file of another version is refused as such,
// never half understood. Generated headers check it with #if.
#define LRPC_VERSION 5

static_assert(std::endian::native == std::endian::little,
              "lrpc frames are little-endian and copied as host bytes; big-endian hosts are unsupported");

namespace lrpc {

inline constexpr uint8_t kVersion = LRPC_VERSION;

class Binding;
class CallChannel;
class ServerCall;
class ViewArena;  // runtime/codec_view.h: where a Reader puts the arrays views need
namespace codec {
struct Reader;
class CapCodec;
}  // namespace codec
namespace detail {
class ClientCaps;  // runtime/capability.h: a call's capabilities, named by its copy code
}  // namespace detail

// One entry of a procedure descriptor list (PDL), emitted per method by the generator.
struct ProcedureDescriptor {
  uint32_t index;        // position in the interface's PDL (inherited methods first)
  uint16_t ordinal;      // the method's @N in the schema that declares it
  const char* name;      // "add"
  uint32_t argsSize;     // fixed part of the argument frame, bytes
  uint32_t resultsSize;  // fixed part of the result frame, bytes
  uint32_t align;        // alignment the frames need (<= 8)
  uint32_t astackCount;  // A-stacks for this procedure ($lrpc.astacks, default 5)
  uint32_t astackBytes;  // bytes per A-stack frame area: max(args, results) fixed parts,
                         // plus inline tail room when the procedure is variable-size
  bool variable;         // has a Text/Data/List argument or result
};

class ServerCall;
class CapTable;       // runtime/capability.h
struct HostedObject;  // runtime/capability.h
struct CapImport;     // runtime/capability.h
// Generated per interface: validates the frame of `procedure`, copies the arguments out,
// runs the handler on `server` (a Foo::Server*), writes the results. Never throws.
using DispatchFn = Status (*)(void* server, uint32_t procedure, ServerCall& call) noexcept;

struct InterfaceDescriptor {
  const char* name;         // schema-qualified, e.g. "calc.capnp:Calc"
  uint64_t id;              // the capnp type id
  uint64_t signatureHash;   // hash over every method's name, ordinal and parameter types
  const ProcedureDescriptor* procedures;
  uint32_t procedureCount;
  DispatchFn dispatch;
  // Its methods pass or return capabilities: the PDL's last procedure is then the tunnel that
  // calls on received capabilities travel through (runtime/capability.h).
  bool carriesCaps = false;
  // The interfaces it extends whose PDL opens its own: its first base, that one's first base,
  // and so on. A client of any of them calls an object of this one with the same procedure
  // numbers, so a capability of this interface may be held as any of them.
  const uint64_t* prefixBases = nullptr;
  uint32_t prefixBaseCount = 0;
  // Makes an object of this interface that forwards every call to `target` (a Foo::Server*,
  // owned by the result): how a capability of one binding is passed on through another.
  std::shared_ptr<void> (*forward)(std::shared_ptr<Binding> target) = nullptr;
};

// Whether an object of `iface` may be called as interface `id`: it is that interface, or
// extends it at the start of its PDL (InterfaceDescriptor::prefixBases).
inline bool isA(const InterfaceDescriptor& iface, uint64_t id) noexcept {
  if (iface.id == id) return true;
  for (uint32_t i = 0; i < iface.prefixBaseCount; ++i) {
    if (iface.prefixBases[i] == id) return true;
  }
  return false;
}

// Per-call settings. A zero timeout means "no deadline" (liveness is still checked). A
// same-host call starts counting it when its brief inline spin ends (local_call.h), a few
// microseconds after the call began, so that a fast call never reads the clock.
struct CallOptions {
  Duration timeout;
};

class LocalBinding;  // runtime: a same-host binding's A-stacks and control channel

// The binding object a client stub holds. `remote` is its first own member on purpose: the
// first instruction of every generated client method branches on it (one load at a constant
// offset, after the weak reference that enable_shared_from_this keeps). Always owned by a
// shared_ptr: a capability received through it keeps it alive (shared_from_this).
class Binding : public std::enable_shared_from_this<Binding> {
 public:
  Binding(const InterfaceDescriptor& desc, LocalBinding* localBinding, std::shared_ptr<void> owner) noexcept
      : remote(false), iface(&desc), local(localBinding), channel(nullptr), owner_(std::move(owner)) {}
  Binding(const InterfaceDescriptor& desc, CallChannel* callChannel, std::shared_ptr<void> owner) noexcept
      : remote(true), iface(&desc), local(nullptr), channel(callChannel), owner_(std::move(owner)) {}
  // A capability of the peer at the other end of the same-host binding `root`: its calls take
  // root's A-stacks, tunnelled (runtime/capability.h); `capChannel` holds it (its release).
  Binding(const InterfaceDescriptor& desc, LocalBinding* root, CallChannel* capChannel, uint32_t id,
          std::shared_ptr<void> owner) noexcept
      : remote(false), iface(&desc), local(root), channel(capChannel), capId(id), owner_(std::move(owner)) {}

  const bool remote;
  const InterfaceDescriptor* const iface;
  LocalBinding* const local;    // set when !remote
  CallChannel* const channel;   // set when remote, or for a same-host capability
  const uint32_t capId = 0;     // a same-host capability's id in its peer's table, else 0

 private:
  std::shared_ptr<void> owner_;  // keeps `local` or `channel` (and what they use) alive
};

// Where a synchronous call writes its results: `client.get(key, lrpc::into(value))` fills
// `value` (the method's result, or its Results struct) in place of returning a new one, and a
// Text, Data or List result reuses the storage the target already has. A large result
// fetched call after call then lands in warm memory instead of a fresh allocation (past
// glibc's mmap threshold, new pages faulted in on every call). Offered by methods with a
// variable-size result; the target's contents are unspecified when the call fails.
template <class T>
class Into {
 public:
  explicit Into(T& target) noexcept : target_(target) {}
  T& target() const noexcept { return target_; }

 private:
  T& target_;
};
template <class T>
Into<T> into(T& target) noexcept {
  return Into<T>(target);
}

// lrpc::Box<T>: how a generated struct holds a struct that can contain it again (Foo holds a
// Bar that holds a Foo). A C++ value cannot contain itself, so such a field is a nullable,
// owning pointer with value semantics: copies are deep, an empty Box is what Cap'n Proto calls
// a null struct pointer, and it travels as a struct VarRef of length 0 (runtime/codec.h).
template <class T>
class Box {
 public:
  Box() noexcept = default;
  Box(T value) : p_(std::make_unique<T>(std::move(value))) {}  // NOLINT: implicit, like optional
  Box(const Box& other) : p_(other.p_ ? std::make_unique<T>(*other.p_) : nullptr) {}
  Box(Box&&) noexcept = default;
  Box& operator=(const Box& other) {
    if (this != &other) p_ = other.p_ ? std::make_unique<T>(*other.p_) : nullptr;
    return *this;
  }
  Box& operator=(Box&&) noexcept = default;
  ~Box() = default;

  bool has() const noexcept { return p_ != nullptr; }
  explicit operator bool() const noexcept { return has(); }
  // A fresh value in place of whatever it held.
  T& emplace() {
    p_ = std::make_unique<T>();
    return *p_;
  }
  void reset() noexcept { p_.reset(); }
  // Only when has(): an empty Box has no value to look at.
  T& operator*() noexcept { return *p_; }
  const T& operator*() const noexcept { return *p_; }
  T* operator->() noexcept { return p_.get(); }
  const T* operator->() const noexcept { return p_.get(); }

  // Equal when both are empty, or both hold equal values.
  friend bool operator==(const Box& a, const Box& b) {
    if (!a.p_ || !b.p_) return !a.p_ && !b.p_;
    return *a.p_ == *b.p_;
  }

 private:
  std::unique_ptr<T> p_;
};


// A view of a struct field held through lrpc::Box (above): the struct's view, or none.
template <class V>
class BoxView {
 public:
  BoxView() noexcept = default;
  BoxView(const V& value) noexcept : p_(&value) {}  // NOLINT: implicit, like Box's
  bool has() const noexcept { return p_ != nullptr; }
  explicit operator bool() const noexcept { return has(); }
  // Only when has().
  const V& operator*() const noexcept { return *p_; }
  const V* operator->() const noexcept { return p_; }

 private:
  const V* p_ = nullptr;
};

// A capability held inside a nested value (a struct field or List element of interface type
// Foo): the binding a Foo::Client would call through, and convertible to and from Foo::Client.
// A type of its own, not Foo::Client, so that a struct can hold one before Foo's stubs are
// complete.
template <class I>
class Cap {
 public:
  Cap() = default;
  // (From a Foo::Client through its conversion operator: a constructor here would have to name
  // I::Client, which needs I complete wherever a struct holding a Cap is copied.)
  explicit Cap(std::shared_ptr<Binding> binding) noexcept : binding_(std::move(binding)) {}

  // (A template, so that Cap<I> is a complete type before I is.)
  template <class J = I>
  typename J::Client client() const {
    return typename J::Client(binding_);
  }
  const std::shared_ptr<Binding>& binding() const noexcept { return binding_; }
  bool operator==(const Cap&) const = default;

 private:
  std::shared_ptr<Binding> binding_;  // null: the null capability
};

// Names a variable-size value in a frame's tail. `length` is in bytes (a List's element
// count is length / element size). Never trusted: checked against the tail's real size.
struct VarRef {
  uint32_t offset;
  uint32_t length;
};
static_assert(sizeof(VarRef) == 8 && alignof(VarRef) == 4);

// The contract between generated client code and a path: exactly these members, used in this
// order, on a RemoteCall (remote_call.h, the message path) or a LocalCall (local_call.h, A-stacks):
//   status()        why the call could not start (no A-stack, dead peer), else ok
//   binding()       the binding the call goes through (capabilities in its frames name its tables)
//   resultTailApart(value)  (before the arguments, only where the sole variable-size result is
//                   Data) the result tail may arrive apart from the frame, straight into
//                   `value`, the vector that will hold that result, or may still be arriving
//                   when invoke() returns; see takeResultBytes
//   args()          the fixed argument part, argsSize bytes, zeroed
//   argTail(n)      reserve n contiguous tail bytes (at most once per call); their old
//                   contents are unspecified: generated code writes every byte, gaps included
//   invoke()        transfer control and wait for the result or an error
//   results()       the fixed result part, resultsSize bytes (valid after an ok invoke)
//   resultTail()    the result tail as the server wrote it (bounded, but unchecked content)
//   takeResultBytes(tail, ref, out)  sets `out` to the Data value `ref` names in `tail`
//                   (resultTail(), ref checked against it): a copy, or, where the tail arrived
//                   apart in `out` itself, `out` cut to the value. An error where the value was
//                   still arriving (LocalCall: a streamed result) and stopped: the call's error
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
  { call.takeResultBytes(tail, ref, out) } -> std::same_as<Status>;
};

// The schema's `Capability`: a capability whose interface the schema does not name
// (idl/README.md, "Capabilities"). It travels like any other, and castAs<Foo>() makes a
// Foo::Client of it. The object's owner checks the interface on every call, so a call through a
// wrong cast fails there (kBadFrame, "an object of another interface"), never on another object.
struct Capability {
  // Names no interface (id 0, which no capnp interface has) and has no procedures.
  static const InterfaceDescriptor kDescriptor;
  class Client;
};

namespace detail {
// A binding of `iface` for the capability `any` holds: `any` itself when its interface is
// `iface` or extends it, a binding through the same channel when `any` was received untyped,
// and else `any` (whose calls the Client then rejects: kBindingRejected, naming both).
std::shared_ptr<Binding> castBinding(const std::shared_ptr<Binding>& any, const InterfaceDescriptor& iface);
}  // namespace detail

class Capability::Client {
 public:
  // The null capability.
  Client() noexcept = default;
  explicit Client(std::shared_ptr<Binding> binding, const CallOptions& options = {}) noexcept
      : binding_(nullIfRejected(std::move(binding))), options_(options) {}
  // Any interface's Client (or Cap) is a Capability.
  template <class C>
    requires requires(const C& c) {
      { c.binding() } -> std::convertible_to<const std::shared_ptr<Binding>&>;
    }
  Client(const C& typed) noexcept : Client(typed.binding()) {}  // NOLINT: implicit, as capnp's
  Client(const Cap<Capability>& cap) noexcept : Client(cap.binding()) {}  // NOLINT: implicit
  operator Cap<Capability>() const { return Cap<Capability>(binding_); }  // NOLINT: implicit

  // A Foo::Client for this capability (see Capability above). The null capability casts to an
  // unbound Client.
  template <class I>
  typename I::Client castAs() const {
    if (!binding_) return typename I::Client();
    return typename I::Client(detail::castBinding(binding_, I::kDescriptor), options_);
  }
  bool isNull() const noexcept { return binding_ == nullptr; }
  // The binding it travels as (null: the null capability).
  const std::shared_ptr<Binding>& binding() const noexcept { return binding_; }

 private:
  // The null capability for one a channel stands in for (runtime/capability.cc).
  static std::shared_ptr<Binding> nullIfRejected(std::shared_ptr<Binding> b) noexcept;
  std::shared_ptr<Binding> binding_;  // null: the null capability
  CallOptions options_;
};

// In a handler: whether its caller has given up on the call (cancelled it, dropped its
// Pending, or passed its deadline), on both paths. A long handler may look now and then and
// stop early; its result goes nowhere then. False outside a handler.
bool callCancelled() noexcept;

// In a handler: an empty vector to build a large Data result in, whose capacity is that of a
// large result an earlier call returned: on the same host the last one copied out of this
// A-stack's handler, on the network the largest one a client has received whole (of at most
// ExporterOptions::keepBufferBytes). Filling it then writes warm memory: a new vector of more
// than 32 MiB (glibc's largest mmap threshold) is fresh pages on every call. Outside a
// handler, or with nothing kept, a new empty vector. Never holds an earlier call's bytes.
std::vector<uint8_t> resultBuffer() noexcept;

// In a handler: a Data argument's bytes as a vector the handler owns, for a handler that
// returns or keeps them. Where `bytes` is the argument's copy "E" (on the same host, every
// Data argument that is not $Lrpc.inPlace), the copy's storage is moved out, so `bytes` then
// names the returned vector's memory; an echo returning it copies nothing itself, and its
// storage comes back as the next call's copy "E". Elsewhere (the network's request buffer, a
// view into the argument tail, outside a handler) a copy into resultBuffer()'s storage.
std::vector<uint8_t> takeArgument(std::span<const uint8_t> bytes);

// In the handler of a $Lrpc.progressive argument `data`: waits until its first `n` bytes are
// final (the client may still be writing the rest). Not ok: the client went away (kPeerDied) or
// stopped writing for a second (kBadFrame); the handler should return that. n beyond
// data.size(): kInvalidArgument. Bytes that are not an argument being streamed (the network's
// request buffer, a handler's own memory, outside a handler) are final already: ok at once.
Status awaitArgument(std::span<const uint8_t> data, size_t n) noexcept;

namespace detail {

// The tunnel procedure's frames (how the tunnel works: runtime/capability.h).
struct CapCallArgs {
  VarRef frame;        // the inner argument frame, in the tail
  uint32_t object;     // the capability's id
  uint32_t procedure;  // in the object's interface, or kReleaseCap
  uint64_t iface;      // the capnp id of the interface the caller holds it as
};
static_assert(sizeof(CapCallArgs) == 24);
struct CapCallResults {
  VarRef frame;  // the inner result frame, in the tail
};

// The descriptor of the tunnel procedure at PDL index `index`.
constexpr ProcedureDescriptor capCallProcedure(uint32_t index) noexcept {
  return {index, 0xFFFF, "lrpc.capCall", sizeof(CapCallArgs), sizeof(CapCallResults), 8, 5, 1500, true};
}

}  // namespace detail

}  // namespace lrpc
