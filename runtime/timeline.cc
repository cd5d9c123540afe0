// The call-path timestamps of transfer.h (detail::timeline), when the build has LRPC_TIMELINE.
// Each thread keeps its last kRing marks in a ring of its own, small enough to stay in its
// core's cache (a mark that missed would delay the very handoff it times), and writes the ring
// out each time the TSC passes a multiple of 2^kEpochShift, which it does at the same moment in
// every process: so the windows of a client and its server cover the same calls.
#include "runtime/transfer.h"

#if defined(LRPC_TIMELINE)

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <x86intrin.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace lrpc::detail {
namespace {

struct Record {
  uint32_t seq;
  uint32_t mark;
  uint64_t tsc;
};
constexpr uint64_t kRing = uint64_t{1} << 14;  // 256 KiB a thread
constexpr unsigned kEpochShift = 31;            // about a second at 2-3 GHz
constexpr int kMaxDumps = 8;

// What a dump file starts with: two (tsc, CLOCK_MONOTONIC ns) pairs, taken at the thread's
// first mark and at the dump, from which bench/timeline.py converts ticks to ns.
struct Header {
  uint64_t magic;  // "LRPCTL01"
  uint64_t records;
  uint64_t tsc0, ns0, tsc1, ns1;
};
constexpr uint64_t kMagic = 0x31304c5443505251ull;

// One per thread that marks (a diagnostic build only: thread_local state is the point here).
struct ThreadLog {
  std::unique_ptr<Record[]> ring;
  uint64_t count = 0;
  uint64_t epoch = 0;
  uint64_t tsc0 = 0;
  uint64_t ns0 = 0;
  int dumps = 0;

  void dump(uint64_t tsc) noexcept {
    const char* dir = std::getenv("LRPC_TIMELINE_DIR");
    char path[256];
    std::snprintf(path, sizeof path, "%s/%d.%ld.%d", dir != nullptr ? dir : "/tmp/lrpc-timeline", ::getpid(),
                  static_cast<long>(::syscall(SYS_gettid)), ++dumps);
    const int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return;
    const Header h{kMagic, kRing, tsc0, ns0, tsc, static_cast<uint64_t>(monotonicNs())};
    bool ok = ::write(fd, &h, sizeof h) == static_cast<ssize_t>(sizeof h);
    ok = ok && ::write(fd, ring.get(), kRing * sizeof(Record)) == static_cast<ssize_t>(kRing * sizeof(Record));
    (void)ok;  // a short file is dropped by the script
    ::close(fd);
  }
};
thread_local ThreadLog tlog;

}  // namespace

void timelineRecord(Mark mark, uint32_t seq) noexcept {
  ThreadLog& log = tlog;
  if (log.dumps == kMaxDumps) return;
  // RDTSCP, not RDTSC: it waits for every earlier load to complete, so a stamp taken just
  // after seeing a doorbell is not read early, while the doorbell's line is still on its way
  // (RDTSC may run ahead of it and put the handoff's time into the next span).
  unsigned int cpu = 0;
  const uint64_t tsc = __rdtscp(&cpu);
  if (!log.ring) {
    log.ring.reset(new (std::nothrow) Record[kRing]);
    if (!log.ring) {
      log.dumps = kMaxDumps;
      return;
    }
    std::memset(log.ring.get(), 0xff, kRing * sizeof(Record));  // fault the pages in now
    log.tsc0 = tsc;
    log.ns0 = static_cast<uint64_t>(monotonicNs());
    log.epoch = tsc >> kEpochShift;
  }
  log.ring[log.count++ % kRing] = Record{seq, static_cast<uint32_t>(mark), tsc};
  if ((tsc >> kEpochShift) != log.epoch) {
    log.epoch = tsc >> kEpochShift;
    if (log.count >= kRing) log.dump(tsc);
  }
}

}  // namespace lrpc::detail

#endif  // LRPC_TIMELINE
