#include "bench/handoff_floor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "runtime/transfer.h"

namespace lrpc::bench {

// One line for the writer's words, one for the reader's: neither side writes the line the
// other spins on.
struct HandoffBlock {
  alignas(64) std::atomic<uint32_t> seq{0};  // the message to read (the writer's doorbell)
  std::atomic<uint32_t> sleeping{0};          // the reader sleeps on seq
  uint64_t size = 0;
  alignas(64) std::atomic<uint32_t> done{0};  // the last message read
  uint64_t sum = 0;                           // what the reader read, so that it must read it
};

namespace {
constexpr size_t kBytesOffset = 4096;  // the message starts on its own page
constexpr size_t kPiece = 64 * 1024;   // LocalCall::kStreamChunk
}  // namespace

HandoffFloor::HandoffFloor(SharedMemory region, std::unique_ptr<ServerProcess> reader,
                           size_t maxBytes) noexcept
    : region_(std::move(region)),
      reader_(std::move(reader)),
      block_(reinterpret_cast<HandoffBlock*>(region_.data())),
      bytes_(region_.data() + kBytesOffset),
      maxBytes_(maxBytes) {}

Result<std::unique_ptr<HandoffFloor>> HandoffFloor::start(size_t maxBytes) {
  Result<SharedMemory> region = createShared(kBytesOffset + maxBytes);
  if (!region) return region.status();
  new (region->data()) HandoffBlock{};
  ServerSpec spec;
  spec.kind = "handoff_floor";
  spec.args = {std::to_string(region->fd()), std::to_string(maxBytes)};
  spec.passFds = {region->fd()};
  Result<std::unique_ptr<ServerProcess>> reader = ServerProcess::start(spec);
  if (!reader) return reader.status();
  return std::unique_ptr<HandoffFloor>(new HandoffFloor(std::move(*region), std::move(*reader), maxBytes));
}

bool HandoffFloor::handOff(size_t size, uint8_t fill) {
  if (size > maxBytes_) return false;
  // Written in pieces, as lrpc_sink_zerocopy's producer writes (bulk_bench.cc, sharedSink): one
  // memset of megabytes takes glibc's non-temporal path, which sends the lines to memory
  // instead of leaving them in a cache for the reader.
  for (size_t done = 0; done < size; done += kPiece) std::memset(bytes_ + done, fill, std::min(kPiece, size - done));
  return ringAndWait(size);
}

bool HandoffFloor::copyOver(const std::byte* from, size_t size) {
  if (size > maxBytes_) return false;
  // In pieces, as LocalCall::copyTail copies a streamed tail, for the same reason as above.
  for (size_t done = 0; done < size; done += kPiece) std::memcpy(bytes_ + done, from + done, std::min(kPiece, size - done));
  return ringAndWait(size);
}

bool HandoffFloor::ringAndWait(size_t size) {
  block_->size = size;
  // Release (in ring): the reader must see the bytes and the size before the new seq.
  detail::ring(block_->seq, block_->sleeping, ++seq_);
  // This CPU is the benchmark's own: it spins without backing off, as lrpc's client does.
  const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (uint32_t spins = 1;; ++spins) {
    // Acquire: pairs with the reader's release of done after it read the bytes.
    if (block_->done.load(std::memory_order_acquire) == seq_) return true;
    detail::cpuRelax();
    if ((spins & 0xFFFF) == 0 && std::chrono::steady_clock::now() > giveUp) return false;
  }
}

int serveHandoffFloor(int readyFd, int argc, char** argv) {
  if (argc < 2) return 2;
  const size_t maxBytes = std::strtoull(argv[1], nullptr, 10);
  Result<SharedMemory> region = adoptShared(std::atoi(argv[0]), kBytesOffset + maxBytes);
  if (!region) return 3;
  auto* block = reinterpret_cast<HandoffBlock*>(region->data());
  const std::byte* bytes = region->data() + kBytesOffset;
  signalReady(readyFd);
  // Adaptive, as lrpc's server threads wait: the idle reader sleeps, so that it leaves this
  // CPU to the lrpc server it is paired with. SIGTERM ends it (the default action).
  std::atomic<bool> stop{false};
  uint32_t last = 0;
  for (;;) {
    uint32_t seq = 0;
    if (detail::waitForCall(block->seq, block->sleeping, last, TransferMode::kAdaptive, stop, &seq) !=
        detail::WaitResult::kReady) {
      continue;
    }
    last = seq;
    // The in-place handler's loop (bulk_bench.cc, sinkInPlace): every word, where it lies.
    const size_t words = std::min<uint64_t>(block->size, maxBytes) / sizeof(uint64_t);
    uint64_t acc = 0;
    for (size_t i = 0; i < words; ++i) {
      uint64_t w;
      std::memcpy(&w, bytes + i * sizeof w, sizeof w);
      acc += w;
    }
    block->sum += acc;
    // Release: the writer may overwrite the bytes once it sees done.
    block->done.store(seq, std::memory_order_release);
  }
}

}  // namespace lrpc::bench
