// Diagnostics a user can switch on: binding, errors and transport events, silent by default.
//
//   LRPC_LOG=binding,errors     (or "transport", "all", "1"; read once, on first use)
//   lrpc::setLogMask(lrpc::kLogAll);                       // the same from code
//   lrpc::setLogSink([](lrpc::LogTopic, std::string_view line) { ... });   // default: stderr
//
// The switch is process-wide on purpose: log points sit deep inside the runtime and the
// transport (a clerk thread, a server endpoint's polling loop) where no handle of the user's
// reaches, and the environment variable must work on a program that was not written for it.
// It is the only process-wide state of lrpc; it changes nothing but what is printed. The
// check on a silent topic is one relaxed atomic load.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

namespace lrpc {

enum class LogTopic : uint32_t {
  kBinding = 1u << 0,    // exports, imports, bindings accepted, refused and ended
  kErrors = 1u << 1,     // failures reported to a caller or a peer
  kTransport = 1u << 2,  // the UDP transport: sessions, endpoint choice, retransmissions
};
inline constexpr uint32_t kLogAll = 0x7;

// Receives one line (no trailing newline) per event, from whichever thread logged it, one
// call at a time.
using LogSink = std::function<void(LogTopic topic, std::string_view line)>;

// Which topics print: a bit mask of LogTopic values (0: silent). Overrides LRPC_LOG.
void setLogMask(uint32_t mask) noexcept;
uint32_t logMask() noexcept;
// Where lines go; an empty sink restores the default ("lrpc[<topic>] <line>" on stderr).
void setLogSink(LogSink sink);
// "binding,errors", "all", "1" -> mask; "", "0", "none" -> 0. Unknown words are ignored.
uint32_t parseLogMask(std::string_view spec) noexcept;
std::string_view logTopicName(LogTopic topic) noexcept;

namespace detail {
inline bool logOn(LogTopic topic, uint32_t mask) noexcept { return (mask & static_cast<uint32_t>(topic)) != 0; }
inline bool logOn(LogTopic topic) noexcept { return logOn(topic, logMask()); }
// printf-style; formats only when the topic is on.
void logf(LogTopic topic, const char* fmt, ...) noexcept __attribute__((format(printf, 2, 3)));
// `line`, the first time any caller asks while the topic is on (a notice such as a fallback
// that would otherwise repeat for every endpoint).
void logOnce(LogTopic topic, const char* line) noexcept;
}  // namespace detail

}  // namespace lrpc
