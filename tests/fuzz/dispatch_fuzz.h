// The dispatch fuzz target's input format, shared by the libFuzzer entry point, its gtest twin
// and the corpus writer:
//   byte 0     bit 7 clear: server mode, the bytes are a request for Everything's dispatch;
//              bit 7 set: client mode, the bytes are a reply read by Everything::Client.
//              Bits 0-6: the procedure, modulo (procedure count + 2), so some are out of range.
//   bytes 1-2  little-endian length of the fixed part (clamped to what is there)
//   the rest   the fixed part, then the tail
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace lrpc::testing {

inline std::vector<uint8_t> fuzzInput(bool clientMode, uint32_t procedure, const std::vector<std::byte>& fixed,
                                      const std::vector<std::byte>& tail) {
  std::vector<uint8_t> out;
  out.push_back(static_cast<uint8_t>((clientMode ? 0x80 : 0) | (procedure & 0x7f)));
  out.push_back(static_cast<uint8_t>(fixed.size() & 0xff));
  out.push_back(static_cast<uint8_t>(fixed.size() >> 8));
  for (std::byte b : fixed) out.push_back(static_cast<uint8_t>(b));
  for (std::byte b : tail) out.push_back(static_cast<uint8_t>(b));
  return out;
}

}  // namespace lrpc::testing

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
