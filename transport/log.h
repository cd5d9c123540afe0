// Diagnostics for the transport: the "transport" topic of runtime/log.h (LRPC_LOG=transport,
// all or 1; lrpc::setLogMask), silent by default.
#pragma once

namespace lrpc::net::detail {

bool logEnabled() noexcept;
// printf-style line to stderr, prefixed "lrpc: ", when logging is enabled.
void logf(const char* fmt, ...) noexcept __attribute__((format(printf, 1, 2)));

// Like logf, but only the first call per process prints (the fallback notice).
void logOnce(const char* line) noexcept;

}  // namespace lrpc::net::detail
