// A Progressive server whose consume() reads its $Lrpc.progressive argument `step` bytes at a
// time, each part awaited with lrpc::awaitArgument first, and answers the FNV-1a of all of it
// (fnv1a() in every_type_impl.h). It notes how many calls entered and the last error a wait gave.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <span>

#include "every_type.lrpc.h"
#include "tests/testing/every_type_impl.h"

namespace lrpc::testing {

class ProgressiveConsumer final : public Progressive::Server {
 public:
  Result<Progressive::ConsumeResults> consume(std::span<const uint8_t> d, uint32_t step) override {
    entered.fetch_add(1);
    const size_t part = step == 0 ? d.size() : step;
    uint64_t h = fnv1a({});
    for (size_t done = 0; done < d.size(); done += part) {
      const size_t end = std::min(d.size(), done + part);
      if (Status s = lrpc::awaitArgument(d, end); !s.isOk()) {
        lastError.store(static_cast<int>(s.code()));
        return s;
      }
      h = fnv1a(d.subspan(done, end - done), h);
    }
    return Progressive::ConsumeResults{h, d.size()};
  }

  std::atomic<int> entered{0};
  std::atomic<int> lastError{0};  // an Errc
};

}  // namespace lrpc::testing
