// Bounds the handshake CPU one source can cost: a token bucket per source, in a fixed table
// indexed by a keyed hash of the source (sources that collide share a bucket, which only
// makes the limit stricter). Memory is the table, whatever the number of sources.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <vector>

#include "runtime/base/status.h"
#include "transport/secure/crypto.h"

namespace lrpc::secure {

using Clock = std::chrono::steady_clock;
using Instant = Clock::time_point;

struct RateLimiterOptions {
  double perSecond = 20;  // sustained handshakes per source
  double burst = 5;       // handshakes a quiet source may make at once
  size_t buckets = 4096;  // table size (memory: about 24 bytes each)
};

class RateLimiter {
 public:
  static Result<RateLimiter> create(const RateLimiterOptions& options);

  // Takes one token from `source`'s bucket; false when it has none left.
  bool allow(Bytes source, Instant now);
  // The bucket `source` draws from (sources with the same bucket share one limit).
  size_t bucketOf(Bytes source) const;

 private:
  struct Bucket {
    Instant last{};
    double tokens = 0;
    bool used = false;
  };
  RateLimiter(const RateLimiterOptions& options, const Key& hashKey);
  RateLimiterOptions options_;
  Key hashKey_{};  // random per limiter, so nobody can aim collisions at another source
  std::vector<Bucket> buckets_;
};

}  // namespace lrpc::secure
