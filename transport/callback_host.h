// Callbacks over UDP: objects a process passes to its peer through a channel (a Foo::Client
// made with Foo::Client::serve, or a proxy), which the peer then calls.
//
// A UDP client has no thread of its own to serve the peer's calls (its callers take turns
// polling), so the reverse direction is a session of its own, as on the same host, where it
// is an A-stack region of its own. The first time a channel carries one of its objects, this
// process starts a NetCallbackHost: a UdpServer on the channel's local address (a fresh port)
// that serves one interface, the capability tunnel (lrpc::detail::kCallbackInterface), over
// one export table, where the objects passed are kept. It tells the peer the port (the
// tunnel's kAttachCallbacks call), and the peer opens a channel back to it, authenticated by
// the two static keys the first handshake proved (each side accepts exactly the other, and
// the pre-shared key if there was one), or in clear text when the first session was. Ids of
// the objects travel with kClientHostedCap set, as on the same host.
//
// A caller of the channel that polls while it waits reads the host's socket too
// (UdpChannel::receiveBeside) and runs the callbacks its call causes in its own thread, as a
// same-host caller does; the host's threads serve the rest (idl/README.md, "Callbacks over UDP").
//
// Internal: not part of the generated-code contract.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "runtime/cap_table.h"
#include "runtime/capability.h"
#include "transport/client.h"
#include "transport/netns.h"
#include "transport/secure/keys.h"

namespace lrpc::net {

class UdpServer;

// The name the host exports its tunnel under.
inline constexpr std::string_view kCallbackService = "lrpc.callbacks";

// What one side of a session needs to open the reverse direction.
struct ReverseSetup {
  std::optional<secure::KeyPair> self;  // our static key pair; empty: clear text
  secure::PublicKey peer{};             // the static key the peer proved in its handshake
  std::optional<secure::PresharedKey> psk;
  // Blocking whatever the forward channel's mode: the host is idle but for callbacks, and a
  // polling host would hold a core per channel that ever passed an object. An adaptive one
  // spun after each callback on the core its waiting caller needed (the caller's process is
  // often on one core), and its callbacks took several times as long as a host woken each time.
  ReceiveMode mode = ReceiveMode::kBlocking;
  bool emulatedEndpoint = false;
  size_t maxDatagram = kDefaultMaxDatagram;  // the socket's, sealing included
  uint32_t maxCapabilities = CapTable::kDefaultLimit;
  SocketNamespace netns;  // where the channel's socket is: the host's goes there too
};

class NetCallbackHost {
 public:
  // Serves on `local`'s address (its port is ignored: a fresh one is picked).
  static Result<std::unique_ptr<NetCallbackHost>> start(const ReverseSetup& setup, NetAddress local);
  // Stops the server (the peer's later calls on our objects fail with kPeerDied) and drops
  // every object. From one of the host's own threads (a released object held the last
  // reference to the channel that owns us) the server is stopped by a thread of its own.
  ~NetCallbackHost();
  NetCallbackHost(const NetCallbackHost&) = delete;
  NetCallbackHost& operator=(const NetCallbackHost&) = delete;

  uint16_t port() const noexcept { return port_; }
  // A waiting caller of the channel that owns us serves the callbacks its call causes
  // through it (UdpServer::takeArrived): the host's own thread would have to be scheduled on
  // the core that the caller keeps busy while it waits.
  UdpServer& server() noexcept { return *server_; }
  CapTable& table() noexcept { return *table_; }
  // For releases made after the lock that guards the host is let go.
  std::shared_ptr<CapTable> sharedTable() const noexcept { return table_; }

 private:
  NetCallbackHost(std::shared_ptr<CapTable> table, std::unique_ptr<UdpServer> server, uint16_t port) noexcept;
  std::shared_ptr<CapTable> table_;
  std::unique_ptr<UdpServer> server_;
  uint16_t port_;
};

// Opens a channel to `server` for `name` (a handshake with `initiator` first, when given;
// else clear text) and returns a binding that owns it. With `reverse`, objects of this
// process can be passed through it.
Result<std::shared_ptr<Binding>> openBinding(NetAddress server, std::string_view name, const InterfaceDescriptor& iface,
                                             const ClientOptions& options, std::optional<secure::Initiator> initiator,
                                             std::unique_ptr<ReverseSetup> reverse);

}  // namespace lrpc::net
