// A span of time in nanoseconds, made from any std::chrono::duration: what call options and
// queue waits take. The generated-code contract needs a timeout type but not <chrono> itself
// (a caller that writes `50ms` has included it already), so this header names no clock.
#pragma once

#include <compare>
#include <cstdint>
#include <type_traits>

namespace lrpc {

class Duration {
 public:
  constexpr Duration() noexcept = default;
  // From std::chrono::duration<Rep, Period> or anything shaped like it. Saturates at the
  // int64 range, so that hours::max() means "longer than any wait", not a negative time.
  template <class D>
    requires requires(const D& d) {
      d.count();
      D::period::num;
      D::period::den;
    }
  constexpr Duration(const D& d) noexcept  // NOLINT: implicit, as chrono's own conversions are
      : ns_(toNs(static_cast<long double>(d.count()) * D::period::num * 1'000'000'000 / D::period::den)) {}

  static constexpr Duration nanoseconds(int64_t ns) noexcept {
    Duration d;
    d.ns_ = ns;
    return d;
  }
  // In nanoseconds; zero or less is "none" wherever a timeout is optional.
  constexpr int64_t count() const noexcept { return ns_; }

  friend constexpr auto operator<=>(Duration, Duration) = default;
  friend constexpr Duration operator+(Duration a, Duration b) noexcept { return nanoseconds(a.ns_ + b.ns_); }

 private:
  static constexpr int64_t toNs(long double ns) noexcept {
    if (ns >= static_cast<long double>(INT64_MAX)) return INT64_MAX;
    if (ns <= static_cast<long double>(INT64_MIN)) return INT64_MIN;
    return static_cast<int64_t>(ns);
  }

  int64_t ns_ = 0;
};

}  // namespace lrpc
