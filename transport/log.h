// Diagnostics for the transport: silent unless LRPC_LOG=1 (read once per process).
#pragma once

namespace lrpc::net::detail {

bool logEnabled() noexcept;
// printf-style line to stderr, prefixed "lrpc: ", when logging is enabled.
void logf(const char* fmt, ...) noexcept __attribute__((format(printf, 1, 2)));

// Like logf, but only the first call per process prints (the fallback notice).
void logOnce(const char* line) noexcept;

}  // namespace lrpc::net::detail
