// The secure transport's fuzz entry (secure_fuzz.cc), callable from a gtest: byte 0 picks a
// valid message (hello, hello under load, reply, cookie reply, data datagram), the other
// bytes are XORed onto it and set its length. Returns true when the mutated message was
// accepted (a session, keys, a cookie or an opened datagram).
#pragma once

#include <cstddef>
#include <cstdint>

namespace lrpc::secure {
inline constexpr int kFuzzMessageKinds = 5;
bool fuzzOne(const uint8_t* bytes, size_t size);
}  // namespace lrpc::secure
