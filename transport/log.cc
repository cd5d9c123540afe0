#include "transport/log.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>

#include "runtime/log.h"

// The transport's lines are the "transport" topic of the runtime's switch (runtime/log.h):
// LRPC_LOG=transport (or all, or 1), lrpc::setLogMask, lrpc::setLogSink.
namespace lrpc::net::detail {

bool logEnabled() noexcept { return lrpc::detail::logOn(LogTopic::kTransport); }

void logf(const char* fmt, ...) noexcept {
  if (!logEnabled()) return;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  lrpc::detail::logf(LogTopic::kTransport, "%s", line);
}

void logOnce(const char* line) noexcept {
  static std::atomic<bool> said{false};  // once per process, by definition
  if (!logEnabled() || said.exchange(true)) return;
  lrpc::detail::logf(LogTopic::kTransport, "%s", line);
}

}  // namespace lrpc::net::detail
