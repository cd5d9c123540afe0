#include "transport/secure/rate_limiter.h"

#include <algorithm>
#include <cstring>

namespace lrpc::secure {

Result<RateLimiter> RateLimiter::create(const RateLimiterOptions& options) {
  if (options.buckets == 0 || options.perSecond <= 0 || options.burst < 1)
    return Status(Errc::kInvalidArgument, "rate limiter: buckets, perSecond > 0 and burst >= 1");
  Key k{};
  if (Status s = randomBytes(k); !s.isOk()) return s;
  return RateLimiter(options, k);
}

RateLimiter::RateLimiter(const RateLimiterOptions& options, const Key& hashKey)
    : options_(options), hashKey_(hashKey), buckets_(options.buckets) {}

size_t RateLimiter::bucketOf(Bytes source) const {
  Hash h = hmacSha256(hashKey_, {source});
  uint64_t index = 0;
  std::memcpy(&index, h.data(), sizeof index);
  return static_cast<size_t>(index % buckets_.size());
}

bool RateLimiter::allow(Bytes source, Instant now) {
  Bucket& b = buckets_[bucketOf(source)];
  if (!b.used) {
    b = Bucket{now, options_.burst, true};
  } else if (now > b.last) {
    const double seconds = std::chrono::duration<double>(now - b.last).count();
    b.tokens = std::min(options_.burst, b.tokens + seconds * options_.perSecond);
    b.last = now;
  }
  if (b.tokens < 1) return false;
  b.tokens -= 1;
  return true;
}

}  // namespace lrpc::secure
