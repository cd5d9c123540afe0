#include "transport/secure/cookie.h"

#include <cstring>

namespace lrpc::secure {
namespace {

Cookie cookieFor(const Key& secret, Bytes source) {
  Hash h = hmacSha256(secret, {source});
  Cookie c{};
  std::memcpy(c.data(), h.data(), c.size());
  return c;
}

}  // namespace

Result<CookieJar> CookieJar::create(std::chrono::seconds lifetime, Instant now) {
  if (lifetime.count() <= 0) return Status(Errc::kInvalidArgument, "cookie lifetime must be positive");
  CookieJar jar(lifetime, now);
  if (Status s = randomBytes(jar.current_); !s.isOk()) return s;
  return jar;
}

CookieJar::~CookieJar() {
  wipe(current_);
  wipe(previous_);
}

Status CookieJar::rotate(Instant now) {
  if (now - rotated_ < lifetime_) return {};
  // After two lifetimes of silence the old secret is as expired as the current one.
  hasPrevious_ = now - rotated_ < 2 * lifetime_;
  previous_ = current_;
  rotated_ = now;
  return randomBytes(current_);
}

Result<Cookie> CookieJar::mint(Bytes source, Instant now) {
  if (Status s = rotate(now); !s.isOk()) return s;
  return cookieFor(current_, source);
}

bool CookieJar::valid(const Cookie& cookie, Bytes source, Instant now) {
  if (!rotate(now).isOk()) return false;
  if (equalConstantTime(cookie, cookieFor(current_, source))) return true;
  return hasPrevious_ && equalConstantTime(cookie, cookieFor(previous_, source));
}

bool CookieJar::validMac(Bytes covered, Bytes mac, Bytes source, Instant now) {
  if (mac.size() != kCookieBytes || !rotate(now).isOk()) return false;
  auto matches = [&](const Key& secret) {
    Hash h = hmacSha256(cookieFor(secret, source), {covered});
    return equalConstantTime(Bytes(h.data(), kCookieBytes), mac);
  };
  return matches(current_) || (hasPrevious_ && matches(previous_));
}

}  // namespace lrpc::secure
