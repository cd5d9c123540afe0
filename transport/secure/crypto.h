// The few primitives the secure transport needs, each a thin call into OpenSSL's libcrypto
// (X25519, SHA-256, HMAC-SHA-256, AES-256-GCM, the system CSPRNG). Nothing here is a
// primitive of our own; everything above this file is protocol logic.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>

#include "runtime/base/status.h"

namespace lrpc::secure {

inline constexpr size_t kKeyBytes = 32;   // X25519 keys, AES-256 keys, chaining keys
inline constexpr size_t kHashBytes = 32;  // SHA-256
inline constexpr size_t kTagBytes = 16;   // AES-GCM tag
inline constexpr size_t kNonceBytes = 12;

using Key = std::array<uint8_t, kKeyBytes>;
using Hash = std::array<uint8_t, kHashBytes>;
using Bytes = std::span<const uint8_t>;
using MutableBytes = std::span<uint8_t>;

// Fills `out` from the kernel's CSPRNG (through OpenSSL); an error only if that fails.
Status randomBytes(MutableBytes out);

// X25519. `publicFromPrivate` derives the public half; `dh` refuses an all-zero shared secret
// (a low-order peer point), as RFC 7748 section 6.1 asks.
Result<Key> publicFromPrivate(const Key& privateKey);
Result<Key> dh(const Key& privateKey, const Key& peerPublic);

// An X25519 private key loaded into OpenSSL once. Loading a raw private key makes OpenSSL
// derive its public half (a scalar multiplication), so a key used for several DHs is kept
// loaded: each dh() then costs one multiplication. Copies share the (never modified) key.
class X25519Key {
 public:
  static Result<X25519Key> generate();
  static Result<X25519Key> fromPrivate(const Key& privateKey);
  const Key& publicKey() const noexcept { return public_; }
  Result<Key> privateKey() const;
  Result<Key> dh(const Key& peerPublic) const;

 private:
  // Owns `pkey` (an EVP_PKEY, freed here even on failure) and reads its public half.
  static Result<X25519Key> adopt(void* pkey);

  std::shared_ptr<void> pkey_;  // EVP_PKEY
  Key public_{};
};

Hash sha256(std::initializer_list<Bytes> parts);
Hash hmacSha256(Bytes key, std::initializer_list<Bytes> parts);

// Equal-time comparison for MACs and keys.
bool equalConstantTime(Bytes a, Bytes b) noexcept;
// Clears secret bytes in a way the compiler does not remove.
void wipe(MutableBytes secret) noexcept;

// One-shot AES-256-GCM for handshake messages (the data path keeps keyed contexts instead,
// see AeadContext). `out` holds plain.size() + kTagBytes.
Status aeadSeal(const Key& key, const std::array<uint8_t, kNonceBytes>& nonce, Bytes ad, Bytes plain,
                MutableBytes out);
// `out` holds sealed.size() - kTagBytes. kBadFrame when the tag does not verify.
Status aeadOpen(const Key& key, const std::array<uint8_t, kNonceBytes>& nonce, Bytes ad, Bytes sealed,
                MutableBytes out);

// An AES-256-GCM key expanded once, for many messages (the data path: the key schedule is
// not redone per datagram). Not thread-safe: one context per direction and thread.
//
// Two implementations of the one cipher, chosen per message by its size: libsodium's for
// messages of at most kSmallMessage bytes, where OpenSSL's EVP interface costs more than the
// cipher (it sets the nonce and reads the tag through named parameters, found by string
// compares), and OpenSSL's above, where its VAES code is twice libsodium's speed
// (transport/secure/README.md, "Choosing the library"). Both compute the same AES-256-GCM, so
// either side may seal with one and open with the other. Where libsodium's needs CPU features
// this machine lacks, OpenSSL's does every size.
class AeadContext {
 public:
  AeadContext() = default;
  ~AeadContext();
  AeadContext(AeadContext&& o) noexcept;
  AeadContext& operator=(AeadContext&& o) noexcept;
  AeadContext(const AeadContext&) = delete;
  AeadContext& operator=(const AeadContext&) = delete;

  static Result<AeadContext> forSealing(const Key& key);
  static Result<AeadContext> forOpening(const Key& key);

  static constexpr size_t kSmallMessage = 512;

  Status seal(const std::array<uint8_t, kNonceBytes>& nonce, Bytes ad, Bytes plain, MutableBytes out);
  Status open(const std::array<uint8_t, kNonceBytes>& nonce, Bytes ad, Bytes sealed, MutableBytes out);
  bool valid() const noexcept { return ctx_ != nullptr; }
  // Whether messages of at most kSmallMessage bytes go through libsodium (for tests).
  bool sealsSmallWithSodium() const noexcept { return small_ != nullptr; }

 private:
  static Result<AeadContext> keyed(const Key& key, bool sealing);
  explicit AeadContext(void* ctx) noexcept : ctx_(ctx) {}
  void* ctx_ = nullptr;    // EVP_CIPHER_CTX, kept opaque so no OpenSSL header leaks to users
  void* small_ = nullptr;  // crypto_aead_aes256gcm_state (libsodium's expanded key), or null
};

// The Noise AESGCM nonce: 4 zero bytes, then the 64-bit counter big-endian.
std::array<uint8_t, kNonceBytes> counterNonce(uint64_t counter) noexcept;

}  // namespace lrpc::secure
