// Noise's SymmetricState and CipherState (Noise spec revision 34, sections 5.1 and 5.2) for
// HASH = SHA-256, CIPHER = AES-256-GCM: the chaining key `ck`, the handshake hash `h`, and
// the current handshake cipher key with its nonce.
#pragma once

#include <cstdint>
#include <string_view>

#include "runtime/base/status.h"
#include "transport/secure/crypto.h"

namespace lrpc::secure {

// HKDF as Noise defines it (section 4.3): temp = HMAC(ck, ikm), out_i = HMAC(temp, out_{i-1} || i).
void noiseHkdf(const Hash& chainingKey, Bytes ikm, Hash* out1, Hash* out2, Hash* out3 = nullptr);

class SymmetricState {
 public:
  // InitializeSymmetric(protocolName): the name is at most 32 bytes here, so h = name padded.
  explicit SymmetricState(std::string_view protocolName);
  SymmetricState(const SymmetricState&) = default;
  SymmetricState& operator=(const SymmetricState&) = default;
  ~SymmetricState();

  void mixHash(Bytes data);
  void mixKey(Bytes inputKeyMaterial);
  void mixKeyAndHash(Bytes inputKeyMaterial);
  // EncryptAndHash / DecryptAndHash: with no key yet, plaintext passes through.
  // `out` is plain.size() + kTagBytes once a key exists, else plain.size().
  Status encryptAndHash(Bytes plain, MutableBytes out);
  Status decryptAndHash(Bytes sealed, MutableBytes out);
  // Split(): the initiator's sending key first.
  void split(Key* initiatorToResponder, Key* responderToInitiator) const;

  const Hash& handshakeHash() const noexcept { return h_; }
  bool hasKey() const noexcept { return hasKey_; }

 private:
  Hash ck_{};
  Hash h_{};
  Key k_{};
  uint64_t n_ = 0;
  bool hasKey_ = false;
};

}  // namespace lrpc::secure
