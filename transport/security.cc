#include "transport/security.h"

namespace lrpc::net {

namespace {
Status bad(const std::string& what) { return Status(Errc::kInvalidArgument, what); }
}  // namespace

Result<ServerKeys> loadServerKeys(const ServerSecurity& s) {
  ServerKeys k;
  k.clearText = s.clearText;
  const bool hasKey = !s.keyFile.empty() || s.keyPair.has_value();
  if (!hasKey) {
    if (!s.allowedClientKeyFiles.empty() || !s.allowedClients.empty() || s.anyClient || !s.pskFile.empty() ||
        s.psk.has_value()) {
      return bad("ServerOptions::security lists clients but has no key: set keyFile (lrpc keygen) or keyPair");
    }
    // Secure by default: clear text only when asked for.
    if (!s.clearText) {
      return bad("ServerOptions::security has no key: set keyFile (lrpc keygen) or keyPair for authenticated, "
                 "encrypted sessions, or clearText = true to serve clear text on a network you own");
    }
    return k;
  }
  if (!s.keyFile.empty() && s.keyPair.has_value()) return bad("ServerOptions::security: keyFile or keyPair, not both");
  if (s.keyPair) {
    k.self = *s.keyPair;
  } else {
    auto pair = secure::loadKeyPair(s.keyFile);
    if (!pair) return pair.status();
    k.self = std::move(*pair);
  }
  k.responder.allowedClients = s.allowedClients;
  for (const std::string& file : s.allowedClientKeyFiles) {
    auto pub = secure::loadPublicKey(file);
    if (!pub) return pub.status();
    k.responder.allowedClients.push_back(*pub);
  }
  if (!s.pskFile.empty() && s.psk.has_value()) return bad("ServerOptions::security: pskFile or psk, not both");
  if (s.psk) k.responder.psk = *s.psk;
  if (!s.pskFile.empty()) {
    auto psk = secure::loadPresharedKey(s.pskFile);
    if (!psk) return psk.status();
    k.responder.psk = *psk;
  }
  // A pre-shared key alone admits whoever holds it, whatever their static key.
  k.responder.anyClient = s.anyClient || (k.responder.allowedClients.empty() && k.responder.psk.has_value());
  if (k.responder.allowedClients.empty() && !k.responder.anyClient) {
    return bad("ServerOptions::security: no client could connect: list allowedClientKeyFiles/allowedClients, "
               "set a psk, or say anyClient");
  }
  if (s.maxPending == 0 || s.maxSessions == 0) return bad("ServerOptions::security: maxPending and maxSessions must be at least 1");
  k.responder.cookieAboveHellosPerSecond = s.cookieAboveHellosPerSecond;
  k.responder.rate = s.rate;
  k.secure = true;
  return k;
}

Result<ClientKeys> loadClientKeys(const ClientSecurity& s, std::string_view addressKey, bool clearScheme) {
  ClientKeys k;
  if (clearScheme || s.clearText) {
    if (!addressKey.empty() || s.serverKey) {
      return bad("a server key was given for a clear-text connection: use udp:// for a secure one");
    }
    return k;
  }
  std::optional<secure::PublicKey> server = s.serverKey;
  if (!addressKey.empty()) {
    auto fromAddress = secure::PublicKey::fromText(addressKey);
    if (!fromAddress) return Status(Errc::kInvalidArgument, "?key= in the address: " + fromAddress.status().detail());
    if (server && !(*server == *fromAddress)) {
      return bad("the address's ?key= and ClientSecurity::serverKey name different server keys");
    }
    server = *fromAddress;
  }
  if (!server) {
    // Secure by default: a udp:// address without the server's key cannot authenticate it.
    return bad("no server key to pin: add ?key=<the server's public key> to the udp:// address (or set "
               "ClientSecurity::serverKey), or say udp+clear:// for clear text on a network you own");
  }
  if (s.rehandshakeAfter.count() <= 0) return bad("ClientSecurity::rehandshakeAfter must be positive");
  std::optional<secure::KeyPair> self = s.keyPair;
  if (!s.keyFile.empty()) {
    if (self) return bad("ClientSecurity: keyFile or keyPair, not both");
    auto pair = secure::loadKeyPair(s.keyFile);
    if (!pair) return pair.status();
    self = std::move(*pair);
  }
  if (!self) {
    auto fresh = secure::KeyPair::generate();
    if (!fresh) return fresh.status();
    self = std::move(*fresh);
  }
  std::optional<secure::PresharedKey> psk = s.psk;
  if (!s.pskFile.empty()) {
    if (psk) return bad("ClientSecurity: pskFile or psk, not both");
    auto loaded = secure::loadPresharedKey(s.pskFile);
    if (!loaded) return loaded.status();
    psk = *loaded;
  }
  auto initiator = secure::Initiator::create(*self, *server, psk);
  if (!initiator) return initiator.status();
  k.initiator.emplace(std::move(*initiator));
  k.self = std::move(self);
  k.server = *server;
  k.psk = psk;
  return k;
}

}  // namespace lrpc::net
