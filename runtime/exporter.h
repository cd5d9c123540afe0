// The server side of same-host lrpc: an Exporter serves interfaces under names.
//
//   lrpc::Exporter exporter;                       // ExporterOptions: directory, allowed uids, limits
//   PaperImpl impl;                                // a generated Foo::Server subclass
//   if (auto s = exporter.add<lrpc::paper::Paper>("paper", impl); !s.isOk()) ...
//   ... serve until the Exporter is destroyed (its destructor stops and joins everything).
//
// Per exported name, an acceptor thread accepts binding requests on the name's socket. Per
// binding (one client process), a clerk thread checks the client's credentials and interface,
// creates the binding's A-stack region (a sealed memfd), passes it over the socket, and then
// watches the socket: when the client goes away it stops the binding's server threads and
// frees everything. Server threads are started lazily, one per A-stack the client actually
// uses (its "E-stack"), and each runs the generated dispatch for calls on its A-stack.
//
// Thread safety: add() and stats() may be called from any thread. `impl` must outlive the
// Exporter and be callable from several threads at once (one per A-stack in use).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/contract.h"

namespace lrpc {

struct ExporterOptions {
  // Where names live (see runtime/names.h); empty: $LRPC_DIR, $XDG_RUNTIME_DIR/lrpc, /tmp/lrpc-<uid>.
  std::string dir;
  // Uids besides our own effective uid that may import (checked with SO_PEERCRED). When not
  // empty, the socket is made connectable by others (mode 0666); the uid check is what guards it,
  // and `dir` must be searchable by them.
  std::vector<uid_t> allowUids;
  // Live bindings per exported name, and server threads in the whole Exporter; beyond them a
  // binding is rejected (kResourceExhausted) or a call's first use of an A-stack fails.
  uint32_t maxBindings = 256;
  uint32_t maxServerThreads = 1024;
  // Largest out-of-band tail (arguments or results) of one call.
  uint64_t maxOutOfBandBytes = uint64_t{1} << 30;
  // Capabilities one binding may hold on this server at once (runtime/capability.h); beyond
  // them a call that would hand out one more fails with kResourceExhausted.
  uint32_t maxCapabilities = 4096;
};

// Counters for introspection (a later `lrpc stat`).
struct ExporterStats {
  uint64_t bindingsLive = 0;      // clients bound now
  uint64_t bindingsTotal = 0;     // accepted since start
  uint64_t bindingsRejected = 0;  // refused: credentials, interface mismatch, limits, bad hello
  uint64_t serverThreads = 0;     // A-stacks with a server thread now
  uint64_t callsServed = 0;       // calls dispatched (finished threads and live ones)
  uint64_t callErrors = 0;        // calls answered with an error status (bad frame, fault, ...)
};

class Exporter {
 public:
  explicit Exporter(ExporterOptions options = {});
  // Stops accepting, ends every binding (clients see kPeerDied), joins every thread, removes
  // the sockets and lock files.
  ~Exporter();
  Exporter(const Exporter&) = delete;
  Exporter& operator=(const Exporter&) = delete;

  // Serves `impl` (the generated Iface::Server, or a subclass) under `name`.
  template <class Iface, class Impl>
  Status add(std::string_view name, Impl& impl) {
    typename Iface::Server* server = &impl;
    return add(name, Iface::kDescriptor, server);
  }
  // The same, untyped: `impl` is what iface.dispatch expects (a Foo::Server*). kAlreadyExists
  // when a live process serves the name; a name left by a dead server is taken over.
  Status add(std::string_view name, const InterfaceDescriptor& iface, void* impl);

  ExporterStats stats() const;
  // The directory the names are in.
  const std::string& dir() const noexcept;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace lrpc
