// The dispatch fuzz target's input format, shared by the libFuzzer entry point, its gtest twin
// and the corpus writer:
//   byte 0     bit 7 clear: server mode, the bytes are a request for Everything's dispatch;
//              bit 7 set: client mode, the bytes are a reply read by Everything::Client.
//              Bits 0-6: the procedure, modulo (procedure count + 2), so some are out of range.
//   bytes 1-2  little-endian length of the fixed part (clamped to what is there)
//   the rest   the fixed part, then the tail
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
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

// One input in that format, read back: the fixed part and the tail as exact-size private
// copies, so that the sanitizers see any read past either part.
struct FuzzFrame {
  bool clientMode = false;
  uint32_t procedure = 0;  // modulo (procedure count + 2): some are out of range
  std::vector<std::byte> fixed;
  std::vector<std::byte> tail;

  // The whole frame, as a reply a client reads.
  std::vector<std::byte> joined() const {
    std::vector<std::byte> all(fixed);
    all.insert(all.end(), tail.begin(), tail.end());
    return all;
  }
};

// False for an input too short to name a procedure.
inline bool readFuzzInput(const uint8_t* data, size_t size, uint32_t procedureCount, FuzzFrame& out) {
  if (size < 3) return false;
  out.clientMode = (data[0] & 0x80) != 0;
  out.procedure = (data[0] & 0x7fu) % (procedureCount + 2);
  const size_t fixedLen = std::min<size_t>(static_cast<size_t>(data[1] | (data[2] << 8)), size - 3);
  out.fixed.assign(fixedLen, std::byte{0});
  out.tail.assign(size - 3 - fixedLen, std::byte{0});
  if (!out.fixed.empty()) std::memcpy(out.fixed.data(), data + 3, out.fixed.size());
  if (!out.tail.empty()) std::memcpy(out.tail.data(), data + 3 + fixedLen, out.tail.size());
  return true;
}

}  // namespace lrpc::testing

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
