// Static X25519 identities: key pairs, their files, and the text form of a public key.
//
// Text form of a public key: 43 characters of base64url without padding (32 bytes), e.g. in
// an address `udp://host:port/name?key=<text>`. Files (written by `lrpc keygen <prefix>`):
//   <prefix>.key  "lrpc-x25519-private-key <text>\n", mode 0600, owner only
//   <prefix>.pub  "lrpc-x25519-public-key <text>\n",  mode 0600 as written (may be shared)
// A pre-shared key file is "lrpc-psk <text>\n" with the same rules as a private key file.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/base/status.h"
#include "transport/secure/crypto.h"

namespace lrpc::secure {

struct PublicKey {
  Key bytes{};
  std::string toText() const;
  static Result<PublicKey> fromText(std::string_view text);
  friend bool operator==(const PublicKey&, const PublicKey&) = default;
};

// A static key pair. Its private half is wiped when the object dies.
class KeyPair {
 public:
  static Result<KeyPair> generate();
  static Result<KeyPair> fromPrivate(const Key& privateKey);
  KeyPair(const KeyPair& o) = default;
  KeyPair& operator=(const KeyPair& o) = default;
  ~KeyPair() { wipe(privateKey_); }

  const Key& privateKey() const noexcept { return privateKey_; }
  const PublicKey& publicKey() const noexcept { return publicKey_; }
  // X25519 of our private key with `peerPublic` (one scalar multiplication: the key stays
  // loaded); kBadFrame for a low-order peer point.
  Result<Key> dh(const Key& peerPublic) const { return loaded_.dh(peerPublic); }

 private:
  KeyPair() = default;
  Key privateKey_{};
  PublicKey publicKey_{};
  X25519Key loaded_;
};

// A 32-byte pre-shared key (Noise psk2), wiped when the object dies.
struct PresharedKey {
  Key bytes{};
  PresharedKey() = default;
  PresharedKey(const PresharedKey&) = default;
  PresharedKey& operator=(const PresharedKey&) = default;
  ~PresharedKey() { wipe(bytes); }
  static Result<PresharedKey> generate();
};

// Writes `<prefix>.key` and `<prefix>.pub`. Refuses (kAlreadyExists) to overwrite either file.
Status writeKeyPair(const KeyPair& pair, const std::string& prefix);
Status writePresharedKey(const PresharedKey& psk, const std::string& path);

// Loading refuses with a reason naming the file: a secret file that is not a regular file of
// ours or that any other user may read or write (kPermissionDenied), a file of the wrong
// size or format (kInvalidArgument), a missing file (kNotFound).
Result<KeyPair> loadKeyPair(const std::string& privateKeyPath);
Result<PublicKey> loadPublicKey(const std::string& path);
Result<PresharedKey> loadPresharedKey(const std::string& path);

}  // namespace lrpc::secure
