// A Blobs server whose data() (an echo) returns its argument through lrpc::takeArgument and
// notes what it saw, for tests of the argument storage a handler takes over: digest() answers
// how many calls got the argument's own storage back from takeArgument (hash) and how many
// found their argument in the memory the previous large result went back in (n).
#pragma once
#include <atomic>
#include <cstdint>
#include <span>
#include <vector>

#include "every_type.lrpc.h"
#include "tests/testing/recycling_blobs.h"

namespace lrpc::testing {

class TakingBlobs final : public DataOnlyBlobs {
 public:
  Result<std::vector<uint8_t>> data(std::span<const uint8_t> d) override {
    // The previous result's address is only compared, never read: its vector is gone.
    if (!d.empty() && reinterpret_cast<uintptr_t>(d.data()) == lastLarge_.load()) ++reused_;
    std::vector<uint8_t> out = lrpc::takeArgument(d);
    if (!d.empty() && out.data() == d.data()) ++moved_;
    if (out.size() >= (size_t{1} << 20)) lastLarge_ = reinterpret_cast<uintptr_t>(out.data());
    return out;
  }
  Result<Blobs::DigestResults> digest(std::span<const uint8_t>) override {
    return Blobs::DigestResults{moved_.load(), reused_.load()};
  }

 private:
  std::atomic<uint64_t> moved_{0};  // handlers may run on several server threads
  std::atomic<uint64_t> reused_{0};
  std::atomic<uintptr_t> lastLarge_{0};
};

}  // namespace lrpc::testing
