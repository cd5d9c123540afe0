// Round-trip times of a ping run, and the summary line ping(8) users expect.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace lrpc::cli {

class LatencySamples {
 public:
  void add(std::chrono::nanoseconds rtt) { samples_.push_back(rtt.count()); }
  size_t size() const noexcept { return samples_.size(); }
  // "min/avg/max = 9.1/11.0/14.2 us, p50 10.8 us, p90 13.0 us, p99 14.2 us"; "" when empty.
  std::string summary() const;
  // Nearest-rank percentile (0 < p <= 100) in nanoseconds; samples must not be empty.
  int64_t percentile(double p) const;

 private:
  std::vector<int64_t> samples_;
};

// "12.3 us", "1.25 ms": three significant digits in the unit that fits.
std::string formatDuration(int64_t ns);

}  // namespace lrpc::cli
