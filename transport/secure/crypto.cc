#include "transport/secure/crypto.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sodium.h>

#include <climits>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace lrpc::secure {
namespace {

struct PkeyFree {
  void operator()(EVP_PKEY* p) const noexcept { EVP_PKEY_free(p); }
};
struct PkeyCtxFree {
  void operator()(EVP_PKEY_CTX* p) const noexcept { EVP_PKEY_CTX_free(p); }
};
struct CipherCtxFree {
  void operator()(EVP_CIPHER_CTX* p) const noexcept { EVP_CIPHER_CTX_free(p); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* p) const noexcept { EVP_MD_CTX_free(p); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using PkeyCtx = std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree>;
using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, CipherCtxFree>;
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;

Status cryptoError(const char* what) {
  unsigned long e = ERR_get_error();
  char text[256] = "no OpenSSL error queued";
  if (e != 0) ERR_error_string_n(e, text, sizeof text);
  ERR_clear_error();
  return Status(Errc::kIoError, std::string(what) + ": " + text);
}

bool fitsInt(size_t n) noexcept { return n <= static_cast<size_t>(INT_MAX); }

// The sizes both AES-GCM implementations need (EVP's lengths are ints).
Status sealSizes(Bytes ad, Bytes plain, MutableBytes out) {
  if (out.size() != plain.size() + kTagBytes || !fitsInt(plain.size()) || !fitsInt(ad.size()))
    return Status(Errc::kInvalidArgument, "seal: output must be the plaintext plus the tag");
  return {};
}
Status openSizes(Bytes ad, Bytes sealed, MutableBytes out) {
  if (sealed.size() < kTagBytes || out.size() != sealed.size() - kTagBytes || !fitsInt(sealed.size()) ||
      !fitsInt(ad.size()))
    return Status(Errc::kBadFrame, "open: sealed message shorter than its tag");
  return {};
}

// Sealing and opening alike set the nonce, feed the associated data and pass the body
// through the cipher, by EVP's encrypt or decrypt calls; each step names its failure.
struct GcmPass {
  decltype(&EVP_EncryptInit_ex) init;
  decltype(&EVP_EncryptUpdate) update;
  const char* nonceError;
  const char* adError;
  const char* bodyError;
};
constexpr GcmPass kSealPass{EVP_EncryptInit_ex, EVP_EncryptUpdate, "seal: nonce", "seal: associated data",
                            "seal: encrypt"};
constexpr GcmPass kOpenPass{EVP_DecryptInit_ex, EVP_DecryptUpdate, "open: nonce", "open: associated data",
                            "open: decrypt"};

// `in` through the cipher into `out` after the nonce and `ad`; *written: the bytes it wrote.
Status gcmPass(EVP_CIPHER_CTX* ctx, const GcmPass& pass, const std::array<uint8_t, kNonceBytes>& nonce, Bytes ad,
               Bytes in, uint8_t* out, int* written) {
  if (pass.init(ctx, nullptr, nullptr, nullptr, nonce.data()) != 1) return cryptoError(pass.nonceError);
  int len = 0;
  if (!ad.empty() && pass.update(ctx, nullptr, &len, ad.data(), static_cast<int>(ad.size())) != 1)
    return cryptoError(pass.adError);
  *written = 0;
  if (!in.empty() && pass.update(ctx, out, written, in.data(), static_cast<int>(in.size())) != 1)
    return cryptoError(pass.bodyError);
  return {};
}

Status sealWith(EVP_CIPHER_CTX* ctx, const std::array<uint8_t, kNonceBytes>& nonce, Bytes ad, Bytes plain,
                MutableBytes out) {
  if (Status s = sealSizes(ad, plain, out); !s.isOk()) return s;
  int written = 0;
  if (Status s = gcmPass(ctx, kSealPass, nonce, ad, plain, out.data(), &written); !s.isOk()) return s;
  int len = 0;
  if (EVP_EncryptFinal_ex(ctx, out.data() + written, &len) != 1) return cryptoError("seal: final");
  if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, static_cast<int>(kTagBytes),
                          out.data() + plain.size()) != 1)
    return cryptoError("seal: tag");
  return {};
}

Status openWith(EVP_CIPHER_CTX* ctx, const std::array<uint8_t, kNonceBytes>& nonce, Bytes ad, Bytes sealed,
                MutableBytes out) {
  if (Status s = openSizes(ad, sealed, out); !s.isOk()) return s;
  const size_t body = sealed.size() - kTagBytes;
  int written = 0;
  if (Status s = gcmPass(ctx, kOpenPass, nonce, ad, sealed.first(body), out.data(), &written); !s.isOk()) return s;
  int len = 0;
  // OpenSSL's tag argument is not const, though it only reads it.
  uint8_t tag[kTagBytes];
  std::memcpy(tag, sealed.data() + body, kTagBytes);
  if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, static_cast<int>(kTagBytes), tag) != 1)
    return cryptoError("open: tag");
  if (EVP_DecryptFinal_ex(ctx, out.data() + written, &len) != 1) {
    ERR_clear_error();
    // Never hand out bytes that failed authentication.
    OPENSSL_cleanse(out.data(), out.size());
    return Status(Errc::kBadFrame, "authentication failed");
  }
  return {};
}

Result<CipherCtx> keyedContext(const Key& key, bool sealing) {
  CipherCtx ctx(EVP_CIPHER_CTX_new());
  if (!ctx) return cryptoError("cipher context");
  int ok = sealing ? EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, key.data(), nullptr)
                   : EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, key.data(), nullptr);
  if (ok != 1) return cryptoError("AES-256-GCM key");
  return ctx;
}

}  // namespace

Status randomBytes(MutableBytes out) {
  if (!fitsInt(out.size())) return Status(Errc::kInvalidArgument, "random: too many bytes");
  if (RAND_bytes(out.data(), static_cast<int>(out.size())) != 1) return cryptoError("random bytes");
  return {};
}

Result<Key> publicFromPrivate(const Key& privateKey) {
  Pkey pkey(EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nullptr, privateKey.data(), privateKey.size()));
  if (!pkey) return cryptoError("X25519 private key");
  Key pub{};
  size_t len = pub.size();
  if (EVP_PKEY_get_raw_public_key(pkey.get(), pub.data(), &len) != 1 || len != pub.size())
    return cryptoError("X25519 public key");
  return pub;
}

Result<Key> dh(const Key& privateKey, const Key& peerPublic) {
  auto self = X25519Key::fromPrivate(privateKey);
  if (!self) return self.status();
  return self->dh(peerPublic);
}

Result<X25519Key> X25519Key::generate() {
  PkeyCtx ctx(EVP_PKEY_CTX_new_id(EVP_PKEY_X25519, nullptr));
  EVP_PKEY* raw = nullptr;
  if (!ctx || EVP_PKEY_keygen_init(ctx.get()) != 1 || EVP_PKEY_keygen(ctx.get(), &raw) != 1)
    return cryptoError("X25519 key generation");
  return adopt(raw);
}

Result<X25519Key> X25519Key::fromPrivate(const Key& privateKey) {
  EVP_PKEY* raw = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nullptr, privateKey.data(), privateKey.size());
  if (!raw) return cryptoError("X25519 private key");
  return adopt(raw);
}

Result<X25519Key> X25519Key::adopt(void* pkey) {
  X25519Key k;
  k.pkey_ = std::shared_ptr<void>(pkey, [](void* p) { EVP_PKEY_free(static_cast<EVP_PKEY*>(p)); });
  size_t len = k.public_.size();
  if (EVP_PKEY_get_raw_public_key(static_cast<EVP_PKEY*>(pkey), k.public_.data(), &len) != 1 ||
      len != k.public_.size())
    return cryptoError("X25519 public key");
  return k;
}

Result<Key> X25519Key::privateKey() const {
  Key priv{};
  size_t len = priv.size();
  if (!pkey_ || EVP_PKEY_get_raw_private_key(static_cast<EVP_PKEY*>(pkey_.get()), priv.data(), &len) != 1 ||
      len != priv.size())
    return cryptoError("X25519 private key export");
  return priv;
}

Result<Key> X25519Key::dh(const Key& peerPublic) const {
  Pkey peer(EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nullptr, peerPublic.data(), peerPublic.size()));
  if (!pkey_ || !peer) return cryptoError("X25519 key");
  PkeyCtx ctx(EVP_PKEY_CTX_new(static_cast<EVP_PKEY*>(pkey_.get()), nullptr));
  // No peer validation: X25519 has no invalid points to check, and the all-zero result of a
  // low-order point is refused below.
  if (!ctx || EVP_PKEY_derive_init(ctx.get()) != 1 || EVP_PKEY_derive_set_peer_ex(ctx.get(), peer.get(), 0) != 1)
    return cryptoError("X25519 derive");
  Key shared{};
  size_t len = shared.size();
  if (EVP_PKEY_derive(ctx.get(), shared.data(), &len) != 1 || len != shared.size()) {
    // OpenSSL itself refuses an all-zero result; report it as the peer's fault.
    ERR_clear_error();
    return Status(Errc::kBadFrame, "X25519: the peer's public key is a low-order point");
  }
  static constexpr Key kZero{};
  if (equalConstantTime(shared, kZero))
    return Status(Errc::kBadFrame, "X25519: the peer's public key is a low-order point");
  return shared;
}

Hash sha256(std::initializer_list<Bytes> parts) {
  Hash out{};
  MdCtx ctx(EVP_MD_CTX_new());
  unsigned len = 0;
  // Failures here mean an out-of-memory OpenSSL; the caller's MAC check then fails closed.
  if (ctx && EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) == 1) {
    for (Bytes p : parts) EVP_DigestUpdate(ctx.get(), p.data(), p.size());
    EVP_DigestFinal_ex(ctx.get(), out.data(), &len);
  }
  return out;
}

Hash hmacSha256(Bytes key, std::initializer_list<Bytes> parts) {
  // The one-shot HMAC() wants one buffer (HMAC_CTX is deprecated in OpenSSL 3); the inputs
  // here are handshake-sized, so they are joined first.
  std::vector<uint8_t> joined;
  for (Bytes p : parts) joined.insert(joined.end(), p.begin(), p.end());
  Hash out{};
  unsigned len = 0;
  // On failure (out of memory inside OpenSSL) the result stays zero and every MAC check fails.
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), joined.data(), joined.size(), out.data(), &len);
  wipe(joined);
  return out;
}

bool equalConstantTime(Bytes a, Bytes b) noexcept {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

void wipe(MutableBytes secret) noexcept { OPENSSL_cleanse(secret.data(), secret.size()); }

Status aeadSeal(const Key& key, const std::array<uint8_t, kNonceBytes>& nonce, Bytes ad, Bytes plain,
                MutableBytes out) {
  auto ctx = keyedContext(key, true);
  if (!ctx) return ctx.status();
  return sealWith(ctx->get(), nonce, ad, plain, out);
}

Status aeadOpen(const Key& key, const std::array<uint8_t, kNonceBytes>& nonce, Bytes ad, Bytes sealed,
                MutableBytes out) {
  auto ctx = keyedContext(key, false);
  if (!ctx) return ctx.status();
  return openWith(ctx->get(), nonce, ad, sealed, out);
}

namespace {
// libsodium's AES-256-GCM, if this CPU has what it needs (AES-NI and PCLMUL): its expanded
// key, else null. sodium_init() is safe to call from any thread, any number of times.
void* sodiumKey(const Key& key) noexcept {
  if (sodium_init() < 0 || crypto_aead_aes256gcm_is_available() == 0) return nullptr;
  auto* state = new (std::nothrow) crypto_aead_aes256gcm_state;
  if (state == nullptr) return nullptr;  // OpenSSL's then does every size
  crypto_aead_aes256gcm_beforenm(state, key.data());
  return state;
}

void dropSodiumKey(void* state) noexcept {
  if (state == nullptr) return;
  sodium_memzero(state, sizeof(crypto_aead_aes256gcm_state));
  delete static_cast<crypto_aead_aes256gcm_state*>(state);
}
}  // namespace

AeadContext::~AeadContext() {
  EVP_CIPHER_CTX_free(static_cast<EVP_CIPHER_CTX*>(ctx_));
  dropSodiumKey(small_);
}
AeadContext::AeadContext(AeadContext&& o) noexcept
    : ctx_(std::exchange(o.ctx_, nullptr)), small_(std::exchange(o.small_, nullptr)) {}
AeadContext& AeadContext::operator=(AeadContext&& o) noexcept {
  // Our keys go to `o`, whose destructor frees them.
  std::swap(ctx_, o.ctx_);
  std::swap(small_, o.small_);
  return *this;
}

Result<AeadContext> AeadContext::keyed(const Key& key, bool sealing) {
  auto ctx = keyedContext(key, sealing);
  if (!ctx) return ctx.status();
  AeadContext c(ctx->release());
  c.small_ = sodiumKey(key);
  return c;
}

Result<AeadContext> AeadContext::forSealing(const Key& key) { return keyed(key, true); }

Result<AeadContext> AeadContext::forOpening(const Key& key) { return keyed(key, false); }

Status AeadContext::seal(const std::array<uint8_t, kNonceBytes>& nonce, Bytes ad, Bytes plain, MutableBytes out) {
  if (!ctx_) return Status(Errc::kInvalidArgument, "seal: no key");
  if (small_ == nullptr || plain.size() > kSmallMessage) {
    return sealWith(static_cast<EVP_CIPHER_CTX*>(ctx_), nonce, ad, plain, out);
  }
  if (Status s = sealSizes(ad, plain, out); !s.isOk()) return s;
  unsigned long long written = 0;
  if (crypto_aead_aes256gcm_encrypt_afternm(out.data(), &written, plain.data(), plain.size(), ad.data(), ad.size(),
                                            nullptr, nonce.data(),
                                            static_cast<const crypto_aead_aes256gcm_state*>(small_)) != 0 ||
      written != out.size()) {
    return Status(Errc::kIoError, "seal: libsodium AES-256-GCM failed");
  }
  return {};
}

Status AeadContext::open(const std::array<uint8_t, kNonceBytes>& nonce, Bytes ad, Bytes sealed, MutableBytes out) {
  if (!ctx_) return Status(Errc::kInvalidArgument, "open: no key");
  if (small_ == nullptr || sealed.size() > kSmallMessage + kTagBytes) {
    return openWith(static_cast<EVP_CIPHER_CTX*>(ctx_), nonce, ad, sealed, out);
  }
  if (Status s = openSizes(ad, sealed, out); !s.isOk()) return s;
  unsigned long long clear = 0;
  if (crypto_aead_aes256gcm_decrypt_afternm(out.data(), &clear, nullptr, sealed.data(), sealed.size(), ad.data(),
                                            ad.size(), nonce.data(),
                                            static_cast<const crypto_aead_aes256gcm_state*>(small_)) != 0 ||
      clear != out.size()) {
    // Never hand out bytes that failed authentication.
    sodium_memzero(out.data(), out.size());
    return Status(Errc::kBadFrame, "authentication failed");
  }
  return {};
}

std::array<uint8_t, kNonceBytes> counterNonce(uint64_t counter) noexcept {
  std::array<uint8_t, kNonceBytes> n{};
  for (int i = 0; i < 8; ++i) n[4 + i] = static_cast<uint8_t>(counter >> (56 - 8 * i));
  return n;
}

}  // namespace lrpc::secure
