// The client side of same-host lrpc: importing a name.
//
//   lrpc::Result<lrpc::paper::Paper::Client> paper = lrpc::import<lrpc::paper::Paper>("paper");
//   if (!paper.isOk()) ...                       // kNotFound, kBindingRejected, kPermissionDenied, ...
//   lrpc::Result<int32_t> sum = paper->add(1, 2);
//
// The binding is pairwise (this process and the server process) and lives as long as the last
// copy of the Client (or shared_ptr<Binding>) that uses it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/fd.h"
#include "runtime/base/status.h"
#include "runtime/contract.h"
#include "runtime/transfer.h"

namespace lrpc {

struct ImportOptions {
  // How the caller waits for a return and the server thread for a call (transfer.h).
  TransferMode mode = TransferMode::kAdaptive;
  // Where names live (runtime/names.h); empty: the default directory.
  std::string dir;
  // How long a call waits for one of its procedure's A-stacks when all are in use, before it
  // fails with kResourceExhausted.
  std::chrono::nanoseconds astackWait = std::chrono::seconds(1);
  // How long import waits for the server's answer.
  std::chrono::milliseconds bindTimeout = std::chrono::seconds(5);
  // Server uids we accept besides our own and root (checked with SO_PEERCRED, and as owners of
  // the names directory).
  std::vector<uid_t> trustUids;
};

// Binds to the server that exports `name`, checking that it serves `iface` (same id and
// signature hash). The result's Binding is what a generated Foo::Client holds.
Result<std::shared_ptr<Binding>> importBinding(std::string_view name, const InterfaceDescriptor& iface,
                                               const ImportOptions& options = {});

namespace detail {
// The binding handshake over a connected socket, whose peer's credentials the caller has
// checked: importBinding after connect, and a clerk importing a client's callbacks
// (runtime/callbacks.h). `name` is for messages only.
Result<std::shared_ptr<Binding>> importOverSocket(OwnedFd sock, std::string_view name, const InterfaceDescriptor& iface,
                                                  const ImportOptions& options);
}  // namespace detail

// The typed form: a generated Foo::Client bound to `name`.
template <class Iface>
Result<typename Iface::Client> import(std::string_view name, const ImportOptions& options = {}) {
  Result<std::shared_ptr<Binding>> b = importBinding(name, Iface::kDescriptor, options);
  if (!b.isOk()) return b.status();
  return typename Iface::Client(std::move(*b));
}

}  // namespace lrpc
