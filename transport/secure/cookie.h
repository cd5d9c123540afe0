// Stateless address validation for the responder, as WireGuard's cookie and QUIC's retry
// token: cookie = HMAC(secret, source)[0..16), where the secret is random and replaced every
// `lifetime`. A cookie minted under the current or the previous secret is valid, so a cookie
// lives between one and two lifetimes. Only the holder of the secret can mint one, and
// only a host that receives at `source` can learn it; checking costs one HMAC and allocates
// nothing per source.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

#include "runtime/base/status.h"
#include "transport/secure/crypto.h"
#include "transport/secure/rate_limiter.h"

namespace lrpc::secure {

inline constexpr size_t kCookieBytes = 16;
using Cookie = std::array<uint8_t, kCookieBytes>;

class CookieJar {
 public:
  static Result<CookieJar> create(std::chrono::seconds lifetime, Instant now);
  CookieJar(const CookieJar&) = delete;
  CookieJar& operator=(const CookieJar&) = delete;
  CookieJar(CookieJar&&) = default;
  CookieJar& operator=(CookieJar&&) = default;
  ~CookieJar();

  Result<Cookie> mint(Bytes source, Instant now);
  bool valid(const Cookie& cookie, Bytes source, Instant now);
  // Whether `mac` is HMAC(cookie, covered)[0..16) for a valid cookie of `source`: the check of
  // a hello's mac2, which hides the cookie it was made with.
  bool validMac(Bytes covered, Bytes mac, Bytes source, Instant now);

 private:
  CookieJar(std::chrono::seconds lifetime, Instant now) : lifetime_(lifetime), rotated_(now) {}
  Status rotate(Instant now);
  std::chrono::seconds lifetime_;
  Instant rotated_;
  Key current_{};
  Key previous_{};
  bool hasPrevious_ = false;
};

}  // namespace lrpc::secure
