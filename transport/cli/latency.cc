#include "transport/cli/latency.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace lrpc::cli {

int64_t LatencySamples::percentile(double p) const {
  std::vector<int64_t> sorted = samples_;
  std::sort(sorted.begin(), sorted.end());
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

std::string LatencySamples::summary() const {
  if (samples_.empty()) return "";
  auto [lo, hi] = std::minmax_element(samples_.begin(), samples_.end());
  double avg = std::accumulate(samples_.begin(), samples_.end(), 0.0) / static_cast<double>(samples_.size());
  return "min/avg/max = " + formatDuration(*lo) + " / " + formatDuration(static_cast<int64_t>(avg)) + " / " +
         formatDuration(*hi) + ", p50 " + formatDuration(percentile(50)) + ", p90 " + formatDuration(percentile(90)) +
         ", p99 " + formatDuration(percentile(99));
}

std::string formatDuration(int64_t ns) {
  char buf[32];
  double v = static_cast<double>(ns);
  if (ns < 1'000) {
    std::snprintf(buf, sizeof buf, "%lld ns", static_cast<long long>(ns));
  } else if (ns < 1'000'000) {
    std::snprintf(buf, sizeof buf, "%.3g us", v / 1e3);
  } else if (ns < 1'000'000'000) {
    std::snprintf(buf, sizeof buf, "%.3g ms", v / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.3g s", v / 1e9);
  }
  return buf;
}

}  // namespace lrpc::cli
