#include "runtime/base/log.h"

#include "runtime/base/mutex.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace lrpc {

namespace {

// The process-wide switch (see log.h for why there is one). Built on first use, so the
// environment is read once and no constructor runs before main().
struct LogState {
  std::atomic<uint32_t> mask;
  Mutex sinkMu;  // also serializes lines
  LogSink sink LRPC_GUARDED_BY(sinkMu);
  std::atomic<bool> saidOnce{false};  // logOnce has printed its line

  LogState() {
    const char* env = std::getenv("LRPC_LOG");
    mask.store(env == nullptr ? 0 : parseLogMask(env), std::memory_order_relaxed);
  }
};

LogState& state() {
  static LogState s;
  return s;
}

}  // namespace

void setLogMask(uint32_t mask) noexcept { state().mask.store(mask & kLogAll, std::memory_order_relaxed); }

uint32_t logMask() noexcept { return state().mask.load(std::memory_order_relaxed); }

void setLogSink(LogSink sink) {
  LogState& s = state();
  MutexLock lock(s.sinkMu);
  s.sink = std::move(sink);
}

uint32_t parseLogMask(std::string_view spec) noexcept {
  uint32_t mask = 0;
  while (!spec.empty()) {
    size_t comma = spec.find(',');
    std::string_view word = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    if (word == "all" || word == "1") {
      mask |= kLogAll;
    } else if (word == "binding") {
      mask |= static_cast<uint32_t>(LogTopic::kBinding);
    } else if (word == "errors") {
      mask |= static_cast<uint32_t>(LogTopic::kErrors);
    } else if (word == "transport") {
      mask |= static_cast<uint32_t>(LogTopic::kTransport);
    }
  }
  return mask;
}

std::string_view logTopicName(LogTopic topic) noexcept {
  switch (topic) {
    case LogTopic::kBinding: return "binding";
    case LogTopic::kErrors: return "errors";
    case LogTopic::kTransport: return "transport";
  }
  return "?";
}

namespace detail {

void logf(LogTopic topic, const char* fmt, ...) noexcept {
  if (!logOn(topic)) return;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  LogState& s = state();
  MutexLock lock(s.sinkMu);
  if (s.sink) {
    try {
      s.sink(topic, line);
    } catch (...) {
      // A sink that throws loses its line; logging never turns into a failure of the call path.
    }
    return;
  }
  std::string_view name = logTopicName(topic);
  std::fprintf(stderr, "lrpc[%.*s] %s\n", static_cast<int>(name.size()), name.data(), line);
}

void logOnce(LogTopic topic, const char* line) noexcept {
  if (!logOn(topic) || state().saidOnce.exchange(true, std::memory_order_relaxed)) return;
  logf(topic, "%s", line);
}

}  // namespace detail
}  // namespace lrpc
