#include "transport/log.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace lrpc::net::detail {

bool logEnabled() noexcept {
  // A function-local constant, not mutable global state: the environment is read once.
  static const bool enabled = [] {
    const char* v = std::getenv("LRPC_LOG");
    return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
  }();
  return enabled;
}

void logf(const char* fmt, ...) noexcept {
  if (!logEnabled()) return;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "lrpc: %s\n", line);
}

void logOnce(const char* line) noexcept {
  static std::atomic<bool> said{false};  // once per process, by definition
  if (!logEnabled() || said.exchange(true)) return;
  std::fprintf(stderr, "lrpc: %s\n", line);
}

}  // namespace lrpc::net::detail
