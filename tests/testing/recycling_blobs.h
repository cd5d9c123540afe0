// A Blobs server whose data() (an echo) builds its result in lrpc::resultBuffer() and notes
// what it got, for tests of the storage a path keeps for large results: digest() answers how
// many calls found storage already large enough (hash) and how many found bytes in it (n).
#pragma once
#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "every_type.lrpc.h"

namespace lrpc::testing {

// Blobs with every method but data() and digest() answered trivially, for servers that test
// only those two.
class DataOnlyBlobs : public Blobs::Server {
 public:
  Result<uint64_t> ping(uint64_t n) override { return n + 1; }
  Result<std::string> text(std::string_view t) override { return std::string(t); }
  Result<std::string> limited(std::string_view t) override { return std::string(t); }
  Result<Blobs::MixedResults> mixed(uint8_t, std::string_view, bool, std::span<const uint8_t>, int64_t) override {
    return Blobs::MixedResults{};
  }
};

class RecyclingBlobs final : public DataOnlyBlobs {
 public:
  Result<std::vector<uint8_t>> data(std::span<const uint8_t> d) override {
    std::vector<uint8_t> out = lrpc::resultBuffer();
    if (!out.empty()) ++stale_;
    if (!d.empty() && out.capacity() >= d.size()) ++reused_;
    out.assign(d.begin(), d.end());
    return out;
  }
  Result<Blobs::DigestResults> digest(std::span<const uint8_t>) override {
    return Blobs::DigestResults{reused_.load(), stale_.load()};
  }

 private:
  std::atomic<uint64_t> reused_{0};  // handlers may run on several server threads
  std::atomic<uint64_t> stale_{0};
};

}  // namespace lrpc::testing
