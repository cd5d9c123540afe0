// Unpredictable 64-bit values for session cookies and nonces (getrandom, never zero).
#pragma once

#include <cstdint>

namespace lrpc::net::detail {

uint64_t randomCookie() noexcept;

}  // namespace lrpc::net::detail
