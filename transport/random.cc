#include "transport/random.h"

#include <sys/random.h>

#include <cerrno>
#include <chrono>

#include "runtime/base/status.h"

namespace lrpc::net::detail {

uint64_t randomCookie() noexcept {
  uint64_t v = 0;
  for (;;) {
    ssize_t n = ::getrandom(&v, sizeof v, 0);
    if (n == sizeof v && v != 0) return v;
    // getrandom only fails before the pool is seeded or on EINTR; neither lasts.
    LRPC_CHECK(n >= 0 || errno == EINTR || errno == EAGAIN, "getrandom failed");
  }
}

}  // namespace lrpc::net::detail
