// Shared pieces of the reliability campaign (tests/campaign/): how many rounds a crash point
// runs, and what a process holds (fds, threads, memfds, RSS) so that a test can show that a
// survivor leaked nothing.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#ifndef LRPC_CAMPAIGN_DEFAULT_ROUNDS
#define LRPC_CAMPAIGN_DEFAULT_ROUNDS 100
#endif

namespace lrpc::campaign {

// Under AddressSanitizer or ThreadSanitizer freed memory is quarantined or shadowed, so RSS
// says nothing about leaks there (LeakSanitizer covers those); the RSS bounds apply to the
// normal build.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kRssIsMeaningful = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kRssIsMeaningful = false;
#else
inline constexpr bool kRssIsMeaningful = true;
#endif
#else
inline constexpr bool kRssIsMeaningful = true;
#endif

using Clock = std::chrono::steady_clock;

inline int64_t msSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

// Rounds per crash point: $LRPC_CAMPAIGN_ROUNDS, else the build's default (CMake sets it).
inline int rounds() {
  if (const char* e = std::getenv("LRPC_CAMPAIGN_ROUNDS"); e != nullptr && std::atoi(e) > 0) return std::atoi(e);
  return LRPC_CAMPAIGN_DEFAULT_ROUNDS;
}

// Seconds a soak runs: $LRPC_SOAK_SECONDS, else `fallback`.
inline int soakSeconds(int fallback) {
  if (const char* e = std::getenv("LRPC_SOAK_SECONDS"); e != nullptr && std::atoi(e) > 0) return std::atoi(e);
  return fallback;
}

// What a process holds. memfds are the fds whose link reads "memfd:..." (A-stack regions and
// out-of-band segments): a leaked binding shows up here first.
struct Resources {
  int fds = 0;
  int memfds = 0;
  int threads = 0;
  long rssKb = 0;
};

inline Resources measure(const std::string& proc = "/proc/self") {
  Resources r;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(proc + "/fd", ec)) {
    ++r.fds;
    std::error_code lec;
    std::filesystem::path target = std::filesystem::read_symlink(e.path(), lec);
    if (!lec && target.string().rfind("/memfd:", 0) == 0) ++r.memfds;
  }
  for (auto it = std::filesystem::directory_iterator(proc + "/task", ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    ++r.threads;
  }
  if (FILE* f = std::fopen((proc + "/status").c_str(), "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f) != nullptr) {
      if (std::sscanf(line, "VmRSS: %ld kB", &r.rssKb) == 1) break;
    }
    std::fclose(f);
  }
  return r;
}

// measure(), again for up to a second while the thread count differs from `want`'s: a thread
// that pthread_join has returned for can still be listed in /proc/self/task for a moment (the
// kernel wakes the joiner when the thread clears its tid, before it has finished exiting).
inline Resources measureSettled(const Resources& want) {
  Resources r = measure();
  for (int i = 0; i < 200 && r.threads != want.threads; ++i) {
    ::usleep(5000);
    r = measure();
  }
  return r;
}

inline std::string describe(const Resources& r) {
  return "fds " + std::to_string(r.fds) + ", memfds " + std::to_string(r.memfds) + ", threads " +
         std::to_string(r.threads) + ", rss " + std::to_string(r.rssKb) + " kB";
}

}  // namespace lrpc::campaign
