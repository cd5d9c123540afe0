// The Work service of async.capnp, served by the asynchronous-call tests' server processes.
#pragma once

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>

#include "async.lrpc.h"

namespace lrpc::asynctest {

class WorkImpl final : public Work::Server {
 public:
  Result<uint64_t> echo(uint64_t value) override {
    ran_.fetch_add(1, std::memory_order_relaxed);
    return value;
  }
  Result<uint64_t> sleep(uint32_t micros, uint64_t tag) override {
    ran_.fetch_add(1, std::memory_order_relaxed);
    std::this_thread::sleep_for(std::chrono::microseconds(micros));
    return tag;
  }
  Result<uint64_t> ran() override { return ran_.load(std::memory_order_relaxed); }
  Result<std::string> shout(std::string_view text) override {
    std::string out(text);
    for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
  }

  Result<bool> watch(uint32_t micros) override {
    const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(micros);
    while (std::chrono::steady_clock::now() < end) {
      if (lrpc::callCancelled()) {
        seen_.fetch_add(1, std::memory_order_relaxed);
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  }
  Result<uint64_t> cancelsSeen() override { return seen_.load(std::memory_order_relaxed); }

  Status write(uint32_t seq, std::span<const uint8_t> chunk) override {
    std::lock_guard<std::mutex> lock(mu_);
    const bool intact = chunk.size() == seq &&
                        std::all_of(chunk.begin(), chunk.end(), [&](uint8_t b) { return b == (seq & 0xff); });
    if (!intact) ++written_.damaged;
    if (seq != written_.count) written_.inOrder = false;
    ++written_.count;
    written_.bytes += chunk.size();
    return {};
  }
  Result<Work::WrittenResults> written() override {
    std::lock_guard<std::mutex> lock(mu_);
    return written_;
  }

 private:
  std::mutex mu_;
  Work::WrittenResults written_{0, true, 0, 0};
  std::atomic<uint64_t> ran_{0};
  std::atomic<uint64_t> seen_{0};
};

}  // namespace lrpc::asynctest
