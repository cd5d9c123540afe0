#include "transport/secure/symmetric_state.h"

#include <algorithm>
#include <cstring>

namespace lrpc::secure {

void noiseHkdf(const Hash& chainingKey, Bytes ikm, Hash* out1, Hash* out2, Hash* out3) {
  Hash temp = hmacSha256(chainingKey, {ikm});
  const uint8_t one = 1, two = 2, three = 3;
  *out1 = hmacSha256(temp, {Bytes(&one, 1)});
  *out2 = hmacSha256(temp, {*out1, Bytes(&two, 1)});
  if (out3) *out3 = hmacSha256(temp, {*out2, Bytes(&three, 1)});
  wipe(temp);
}

SymmetricState::SymmetricState(std::string_view protocolName) {
  // Names longer than HASHLEN would be hashed; ours is not, and a longer one is a bug here.
  std::memcpy(h_.data(), protocolName.data(), std::min(protocolName.size(), h_.size()));
  ck_ = h_;
}

SymmetricState::~SymmetricState() {
  wipe(ck_);
  wipe(k_);
}

void SymmetricState::mixHash(Bytes data) { h_ = sha256({h_, data}); }

void SymmetricState::mixKey(Bytes inputKeyMaterial) {
  Hash ck{}, k{};
  noiseHkdf(ck_, inputKeyMaterial, &ck, &k);
  ck_ = ck;
  k_ = k;
  n_ = 0;
  hasKey_ = true;
  wipe(ck);
  wipe(k);
}

void SymmetricState::mixKeyAndHash(Bytes inputKeyMaterial) {
  Hash ck{}, h{}, k{};
  noiseHkdf(ck_, inputKeyMaterial, &ck, &h, &k);
  ck_ = ck;
  mixHash(h);
  k_ = k;
  n_ = 0;
  hasKey_ = true;
  wipe(ck);
  wipe(k);
}

Status SymmetricState::encryptAndHash(Bytes plain, MutableBytes out) {
  if (!hasKey_) {
    if (out.size() != plain.size()) return Status(Errc::kInvalidArgument, "encryptAndHash: size");
    std::memcpy(out.data(), plain.data(), plain.size());
  } else if (Status s = aeadSeal(k_, counterNonce(n_), h_, plain, out); !s.isOk()) {
    return s;
  } else {
    ++n_;
  }
  mixHash(out);
  return {};
}

Status SymmetricState::decryptAndHash(Bytes sealed, MutableBytes out) {
  if (!hasKey_) {
    if (out.size() != sealed.size()) return Status(Errc::kInvalidArgument, "decryptAndHash: size");
    std::memcpy(out.data(), sealed.data(), sealed.size());
  } else if (Status s = aeadOpen(k_, counterNonce(n_), h_, sealed, out); !s.isOk()) {
    return s;
  } else {
    ++n_;
  }
  mixHash(sealed);
  return {};
}

void SymmetricState::split(Key* initiatorToResponder, Key* responderToInitiator) const {
  Hash a{}, b{};
  static constexpr uint8_t kEmpty = 0;
  noiseHkdf(ck_, Bytes(&kEmpty, 0), &a, &b);
  *initiatorToResponder = a;
  *responderToInitiator = b;
  wipe(a);
  wipe(b);
}

}  // namespace lrpc::secure
