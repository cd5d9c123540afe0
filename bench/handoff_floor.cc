#include "bench/handoff_floor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "runtime/local_call.h"
#include "runtime/transfer.h"

namespace lrpc::bench {

// One line for the writer's words, one for the reader's: neither side writes the line the
// other spins on.
struct HandoffBlock {
  alignas(64) std::atomic<uint32_t> seq{0};  // the message to read (the writer's doorbell)
  std::atomic<uint32_t> sleeping{0};          // the reader sleeps on seq
  uint64_t size = 0;
  std::atomic<uint32_t> ready{0};             // the last message whose bytes are all written
  alignas(64) std::atomic<uint32_t> done{0};  // the last message read
  uint64_t sum = 0;                           // what the reader read, so that it must read it
};

namespace {
constexpr size_t kBytesOffset = 4096;  // the message starts on its own page
constexpr size_t kPiece = LocalCall::kStreamChunk;

// Spins until `word` holds `seq`: false after 10 s, when the other side has died. Each side
// has its CPU to itself here, so it spins without backing off, as lrpc's client does.
bool spinUntil(const std::atomic<uint32_t>& word, uint32_t seq) {
  const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (uint32_t spins = 1;; ++spins) {
    // Acquire: pairs with the other side's release of `word` after what it publishes.
    if (word.load(std::memory_order_acquire) == seq) return true;
    detail::cpuRelax();
    if ((spins & 0xFFFF) == 0 && std::chrono::steady_clock::now() > giveUp) return false;
  }
}
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
  return deliver(size, [this, fill](size_t at, size_t n) { std::memset(bytes_ + at, fill, n); });
}

bool HandoffFloor::copyOver(const std::byte* from, size_t size) {
  return deliver(size, [this, from](size_t at, size_t n) { std::memcpy(bytes_ + at, from + at, n); });
}

template <class Write>
bool HandoffFloor::deliver(size_t size, Write write) {
  if (size > maxBytes_) return false;
  block_->size = size;
  const uint32_t seq = seq_ + 1;
  // As lrpc publishes a call whose tail it streams: rung when the writing starts, so that the
  // reader spins through the write instead of sleeping, as lrpc's server does (it waits for
  // the whole tail before an in-place handler runs). A smaller message is rung once written.
  const bool early = size >= LocalCall::kStreamBytes;
  // Release (in ring): the reader must see the size before the new seq.
  if (early) detail::ring(block_->seq, block_->sleeping, ++seq_);
  // Written in pieces, as lrpc's callers write (LocalCall::copyTail; bulk_bench.cc,
  // sharedSink): one memset or memcpy of megabytes takes glibc's non-temporal path, which
  // sends the lines to memory instead of leaving them in a cache for the reader.
  for (size_t done = 0; done < size; done += kPiece) write(done, std::min(kPiece, size - done));
  // Release: the reader reads the bytes once it sees them ready.
  block_->ready.store(seq, std::memory_order_release);
  if (!early) detail::ring(block_->seq, block_->sleeping, ++seq_);
  return awaitRead();
}

bool HandoffFloor::awaitRead() {
  // The reader releases done after it read the bytes.
  return spinUntil(block_->done, seq_);
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
    // The writer releases ready after the last byte. One that stops for seconds mid-write
    // has died: its message is never read.
    if (!spinUntil(block->ready, seq)) continue;
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
