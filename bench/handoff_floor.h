#pragma once
// The pattern of an in-place handler that starts only once its argument is whole (lrpc's
// $Lrpc.inPlace without $Lrpc.progressive; lrpc_bulk_bench's in-place modes read progressively
// now, and overlap the write and the read), with no framework: this process
// writes a message into shared memory, rings, and a server process on the other CPU reads
// every word of it where it lies, then answers. A message that lrpc would stream is rung
// before it is written, as lrpc publishes such a call, so that the reader spins through the
// write instead of sleeping and paying a wake-up. What writing the lines on one core and then
// reading them on the other costs, one after the other, as a handler that starts only once
// the last byte is ready must. copyOver is the same with the bytes copied from the writer's
// own buffer, as lrpc_sink_inplace's stub copies its caller's vector: a third pass over them.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "bench/harness.h"

namespace lrpc::bench {

struct HandoffBlock;  // the shared layout, in handoff_floor.cc

class HandoffFloor {
 public:
  static Result<std::unique_ptr<HandoffFloor>> start(size_t maxBytes);
  // Writes `size` bytes of `fill`, hands them over and waits until the reader has read them
  // all; false if it does not answer within seconds (it died).
  bool handOff(size_t size, uint8_t fill);
  // The same, but the bytes are copied from `from` (this process's memory), as an in-place
  // call's stub copies its caller's vector into the segment: three passes over the bytes
  // (read here, write here, read there) where handOff makes two.
  bool copyOver(const std::byte* from, size_t size);

 private:
  HandoffFloor(SharedMemory region, std::unique_ptr<ServerProcess> reader, size_t maxBytes) noexcept;
  // Writes a message with write(offset, n) piece by piece and hands it over.
  template <class Write>
  bool deliver(size_t size, Write write);
  // Waits until the reader has read the message just rung; false if it does not answer.
  bool awaitRead();
  SharedMemory region_;
  std::unique_ptr<ServerProcess> reader_;
  HandoffBlock* block_;
  std::byte* bytes_;
  size_t maxBytes_;
  uint32_t seq_ = 0;
};

// The reader ("--server handoff_floor READY_FD MEMFD MAX_BYTES").
int serveHandoffFloor(int readyFd, int argc, char** argv);

}  // namespace lrpc::bench
