// Who may talk to whom over udp://: the options that make the UDP transport authenticated
// and encrypted (transport/secure/), and the explicit opt-in to clear text.
//
//   server: a static key pair (keyFile or keyPair), and the clients it accepts: listed keys
//           (allowedClientKeyFiles / allowedClients), a pre-shared key, or anyClient.
//   client: the server's public key, pinned in the address (udp://h:p/name?key=<43 chars>)
//           or in `serverKey`; its own key pair (keyFile or keyPair; by default a fresh one
//           per channel, for servers that take any client or only a pre-shared key).
//
// Clear text is never chosen silently: a server says `clearText`, a client uses the address
// scheme udp+clear:// (or `clearText`).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "transport/secure/data_channel.h"
#include "transport/secure/handshake.h"
#include "transport/secure/keys.h"

namespace lrpc::net {

struct ServerSecurity {
  // Also accept clear-text sessions ("LR" datagrams) on the same port; with no key
  // configured, only those. For benchmarks and networks the user owns.
  bool clearText = false;
  std::string keyFile;                     // our private key (`lrpc keygen`), or:
  std::optional<secure::KeyPair> keyPair;  // ... in memory
  std::vector<std::string> allowedClientKeyFiles;  // `.pub` files of clients that may connect
  std::vector<secure::PublicKey> allowedClients;
  bool anyClient = false;  // any client key (the clients still authenticate the server)
  std::string pskFile;     // a pre-shared key every client must have, or:
  std::optional<secure::PresharedKey> psk;
  // Handshakes that completed but whose client has not yet sent a datagram under the new
  // keys: beyond this the oldest is dropped. They never displace a confirmed session.
  uint32_t maxPending = 1024;
  // Confirmed secure sessions; beyond this the least recently active one goes (only a
  // client that completed a handshake can cause that).
  uint32_t maxSessions = 4096;
  uint32_t cookieAboveHellosPerSecond = 1000;  // 0: always ask for a cookie first
  secure::RateLimiterOptions rate;
  secure::DataOptions data;
};

struct ClientSecurity {
  bool clearText = false;                     // as the scheme udp+clear:// does
  std::optional<secure::PublicKey> serverKey; // or ?key= in the address (they must agree)
  std::string keyFile;                        // our private key, or:
  std::optional<secure::KeyPair> keyPair;     // ... in memory; neither: a fresh one
  std::string pskFile;
  std::optional<secure::PresharedKey> psk;
  secure::DataOptions data;
  // Calls going out and nothing authentic coming back for this long: a new handshake (a
  // server that restarted lost our keys; its kReset then reaches the channel, which opens a
  // new session as it does in clear text). At most once per this period.
  std::chrono::nanoseconds rehandshakeAfter = std::chrono::seconds(1);
};

// A secure server's counters (UdpServer::secureStats()).
struct SecureServerStats {
  uint64_t handshakes = 0;     // replies sent (sessions made pending)
  uint64_t cookieReplies = 0;  // hellos answered with a cookie request
  uint64_t refusedHellos = 0;  // hellos dropped (bad MAC, unknown key, replay, rate limit)
  uint64_t droppedData = 0;    // datagrams dropped (no session, failed to open, clear text)
  uint64_t confirmed = 0;      // sessions confirmed so far
  size_t pending = 0;          // now
  size_t sessions = 0;         // confirmed now
};

// The server's settings with every file loaded. `secure` false: clear text only.
struct ServerKeys {
  bool secure = false;
  bool clearText = false;
  std::optional<secure::KeyPair> self;
  secure::ResponderOptions responder;
};
// kInvalidArgument when the settings say nothing usable (naming what to set), or a key
// file's own error (it names the file).
Result<ServerKeys> loadServerKeys(const ServerSecurity& security);

// The client's settings with every file loaded, for the server at `addressKey` (the text of
// ?key=, or empty). `initiator` empty: clear text.
struct ClientKeys {
  std::optional<secure::Initiator> initiator;
  // What the initiator was made of, for the reverse direction (transport/callback_host.h).
  std::optional<secure::KeyPair> self;
  std::optional<secure::PublicKey> server;
  std::optional<secure::PresharedKey> psk;
};
Result<ClientKeys> loadClientKeys(const ClientSecurity& security, std::string_view addressKey, bool clearScheme);

}  // namespace lrpc::net
