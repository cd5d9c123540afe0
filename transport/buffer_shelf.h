// A few large message buffers kept between calls, so that the next large request or reply
// reuses pages already faulted in: a fresh 16 MiB allocation costs about 4,000 page faults
// and glibc hands such a block back to the kernel when it is freed, so without a shelf
// every large call pays them again (most of a 16 MiB result's time on the server).
// Bounded: at most kKept buffers, each of at most `maxBytes` of payload, so an idle peer
// holds at most that much beyond what its calls in flight use.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "runtime/base/mutex.h"
#include "runtime/remote_call.h"

namespace lrpc::net {

class BufferShelf {
 public:
  static constexpr size_t kKept = 2;                 // a request and a reply
  static constexpr size_t kKeepAtLeast = 64 * 1024;  // smaller ones come cheap from malloc
  // A message's buffer holds its frame's fixed part too, so a `maxBytes` payload needs a little
  // more than `maxBytes`: room for that.
  static constexpr size_t kFrameSlack = 64 * 1024;

  explicit BufferShelf(size_t maxBytes) noexcept : maxBytes_(maxBytes) {}

  // Gives `buffer` the smallest kept storage of at least `bytes`, if there is one (its bytes
  // are kept; see MessageBuffer::adoptHeap).
  void lend(MessageBuffer& buffer, size_t bytes) noexcept;
  // Takes `buffer`'s heap storage (the buffer is empty afterwards) and keeps it when it is
  // worth keeping; else it is freed.
  void put(MessageBuffer& buffer) noexcept;

 private:
  struct Kept {
    std::unique_ptr<std::byte[]> storage;
    size_t capacity;
  };
  const size_t maxBytes_;
  Mutex mu_;  // a client's callers lend and put from many threads
  std::vector<Kept> kept_ LRPC_GUARDED_BY(mu_);
};

// The storage of one large Data result, kept for the next handler that asks for it
// (lrpc::resultBuffer()): a handler's result is sent from its own vector, which is dropped
// once the client has the whole reply; this keeps the largest such vector, of at most
// `maxBytes`, instead of giving its pages back.
class ResultShelf {
 public:
  explicit ResultShelf(size_t maxBytes) noexcept : maxBytes_(maxBytes) {}
  // The kept storage, emptied (or a new vector).
  std::vector<uint8_t> take() noexcept LRPC_EXCLUDES(mu_);
  // Keeps `value`'s storage (then `value` is empty) if it is large and larger than the kept one.
  void put(std::vector<uint8_t>& value) noexcept LRPC_EXCLUDES(mu_);

 private:
  const size_t maxBytes_;
  Mutex mu_;  // handlers take and delivered replies put from several threads
  std::vector<uint8_t> kept_ LRPC_GUARDED_BY(mu_);
};

}  // namespace lrpc::net
