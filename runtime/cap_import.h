// Internal to the runtime: how a process calls a capability its peer holds (runtime/capability.h
// is the contract generated code sees). A received capability's calls go through its
// connection's binding, tunnelled in that binding's last procedure; its CapChannel releases the
// peer's object when the last reference here is dropped.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "runtime/capability.h"
#include "runtime/local_call.h"
#include "runtime/remote_call.h"

namespace lrpc::detail {

// A release waits this long at most: a peer that is gone has dropped the object already.
inline constexpr std::chrono::milliseconds kReleaseTimeout{200};

// One call through `root`'s tunnel procedure: `head` names the object and the procedure, and
// `request` is the inner frame; the inner reply lands in `reply`.
Status tunnel(const Binding& root, const CapCallArgs& head, const OutMessage& request, MessageBuffer& reply,
              const CallOptions& options) noexcept;
// kPeerDied once the session `imp` came in has ended: its id may name an object of a later
// session by now.
Status sessionOf(const CapImport& imp) noexcept;
// Whether every fixed argument part of `iface` fits the inline tail of `root`'s tunnel, where a
// same-host call on a capability writes it (LocalCall).
bool fitsTunnel(const LocalBinding& root, const InterfaceDescriptor& iface) noexcept;
// The binding whose connection a call through `via` uses: `via` itself, or, for a received
// capability, the binding it was received through.
const Binding& connectionOf(const Binding& via) noexcept;
// The Client's binding for capability `id` of the peer that `root` reaches. May throw bad_alloc.
std::shared_ptr<Binding> bindingOfImport(std::shared_ptr<Binding> root, uint32_t id, const InterfaceDescriptor& iface);

}  // namespace lrpc::detail
