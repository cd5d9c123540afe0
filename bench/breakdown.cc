#include "bench/breakdown.h"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "bench/lrpc_common.h"
#include "bench/lrpc_sessions.h"
#include "runtime/base/fd.h"
#include "runtime/transfer.h"

#if LRPC_BENCH_DIRECT
#include "paper.lrpc.h"  // lrpc_generate(lrpc_bench .../paper.capnp)
#endif
#if LRPC_BENCH_LOCAL
#include "caps.lrpc.h"  // lrpc_generate(lrpc_bench .../caps.capnp)
#include "runtime/cap_table.h"
#include "runtime/local_call.h"
#include "runtime/plain_call.h"
#endif

namespace lrpc::bench {

#if LRPC_BENCH_DIRECT
// The handler every lrpc column calls (bench/paper_impl.cc).
std::unique_ptr<paper::Paper::Server> makePaperImpl();

namespace {

using paper::Paper;

// User-space instructions retired by this thread, where the machine's performance counters
// allow it (a VM often has none: then available() is false and no counter is reported).
class InstructionCounter {
 public:
  InstructionCounter() noexcept {
    perf_event_attr attr;
    std::memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_HARDWARE;
    attr.config = PERF_COUNT_HW_INSTRUCTIONS;
    attr.disabled = 1;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    fd_ = OwnedFd(static_cast<int>(::syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0)));
  }

  bool available() const noexcept { return fd_.valid(); }
  void start() noexcept {
    if (!available()) return;
    ::ioctl(fd_.get(), PERF_EVENT_IOC_RESET, 0);
    ::ioctl(fd_.get(), PERF_EVENT_IOC_ENABLE, 0);
  }
  // Instructions since start(), or 0 when there is no counter.
  uint64_t stop() noexcept {
    if (!available()) return 0;
    ::ioctl(fd_.get(), PERF_EVENT_IOC_DISABLE, 0);
    uint64_t n = 0;
    if (::read(fd_.get(), &n, sizeof n) != static_cast<ssize_t>(sizeof n)) return 0;
    return n;
  }

 private:
  OwnedFd fd_;
};

// Runs `piece` (false: it failed) once per iteration, and reports its instructions per
// iteration where the counters allow.
template <class Piece>
void timePiece(benchmark::State& state, Piece&& piece) {
  InstructionCounter counter;
  counter.start();
  for (auto _ : state) {
    if (!piece()) {
      state.SkipWithError("the piece failed");
      return;
    }
  }
  const uint64_t instructions = counter.stop();
  if (counter.available() && state.iterations() > 0) {
    state.counters["instructions"] = static_cast<double>(instructions) / static_cast<double>(state.iterations());
  }
}

// A server call over frames in this thread's own memory: the dispatch code alone, with no
// other core's cache lines to fetch. The calls timed here have fixed-size results (no result
// tail). With `table`, capabilities it names can be called through the tunnel.
class FrameCall final : public ServerCall {
 public:
  FrameCall(std::span<const std::byte> args, std::byte* results, CapTable* table = nullptr) noexcept
      : ServerCall(args, {}, results), table_(table) {}
  Result<std::span<std::byte>> resultTail(size_t n) noexcept override {
    if (n == 0) return std::span<std::byte>();
    return Status(Errc::kInvalidArgument, "no result tail in this benchmark");
  }
  CapTable* capTable() noexcept override { return table_; }

 private:
  CapTable* table_;
};

void addDispatch(Call call) {
  const std::string name = std::string("Cost/dispatch/") + callName(call);
  benchmark::RegisterBenchmark(name.c_str(), [call](benchmark::State& state) {
    std::unique_ptr<Paper::Server> impl = makePaperImpl();
    alignas(64) std::byte args[256] = {};
    alignas(64) std::byte results[256] = {};
    uint32_t procedure = Paper::kNull;
    size_t argsBytes = 0;
    if (call == Call::kAdd) {
      const Paper::AddArgsFrame frame{20, 22};
      std::memcpy(args, &frame, sizeof frame);
      procedure = Paper::kAdd;
      argsBytes = sizeof frame;
    } else if (call == Call::kBigIn || call == Call::kBigInOut) {
      for (size_t i = 0; i < 200; ++i) args[i] = static_cast<std::byte>(i);
      procedure = call == Call::kBigIn ? Paper::kBigIn : Paper::kBigInOut;
      argsBytes = 200;
    }
    void* self = impl.get();
    timePiece(state, [&] {
      FrameCall frameCall(std::span<const std::byte>(args, argsBytes), results);
      benchmark::ClobberMemory();  // the next call's arguments are new memory to the compiler
      return Paper::Server::dispatch(self, procedure, frameCall).isOk();
    });
  });
}

// One step of every polling loop: lrpc's waits and the spin floor's look at their doorbell once
// per PAUSE, so a call's own work moves a round trip by whole steps of this length or not at
// all (bench/README.md, "Overhead in ns"). Its length is the CPU's, and on a VM not even
// constant: 40-43 ns and then 20 ns within one hour on the same guest.
void addPause() {
  benchmark::RegisterBenchmark("Cost/pause", [](benchmark::State& state) {
    timePiece(state, [] {
      detail::cpuRelax();
      return true;
    });
  });
}

void addResult() {
  benchmark::RegisterBenchmark("Cost/result", [](benchmark::State& state) {
    int32_t x = 1;
    timePiece(state, [&] {
      benchmark::DoNotOptimize(x);
      Result<int32_t> r(x);
      benchmark::DoNotOptimize(r);
      return r.isOk() && *r == x;
    });
  });
}

#if LRPC_BENCH_LOCAL
// The server side of a call on a capability, as it arrives through the tunnel: the table
// lookup, the inner dispatch over the frame where it lies and the tunnel's results,
// against Cost/dispatch/Null, the same call on a binding's own A-stack.
class NullObj final : public capsb::Obj::Server {
 public:
  Status null() override { return {}; }
};

void addCapDispatch() {
  benchmark::RegisterBenchmark("Cost/capDispatch/Null", [](benchmark::State& state) {
    // A server has threads. Until a process starts one, libstdc++'s shared_ptr counts and
    // glibc's mutex skip their atomic instructions, which would hide what a server pays.
    std::thread([] {}).join();
    CapTable table;
    Result<uint32_t> id = table.add(HostedObject{&capsb::Obj::kDescriptor, std::make_shared<NullObj>()});
    if (!id) {
      state.SkipWithError(id.status().toString().c_str());
      return;
    }
    const detail::CapCallArgs head{{0, 0}, *id, 0, capsb::Obj::kDescriptor.id};
    alignas(64) std::byte args[sizeof head];
    alignas(64) std::byte results[64] = {};
    std::memcpy(args, &head, sizeof head);
    timePiece(state, [&] {
      FrameCall call(std::span<const std::byte>(args, sizeof args), results, &table);
      benchmark::ClobberMemory();
      return detail::serveCapCall(call).isOk();
    });
  });
}

// What passing one of its own objects costs a caller, and what the return's release costs it:
// the export table's add and release, with the object's shared ownership copied in and dropped.
void addCapExport() {
  benchmark::RegisterBenchmark("Cost/capExport", [](benchmark::State& state) {
    std::thread([] {}).join();  // as in Cost/capDispatch: a process with threads
    CapTable table;
    const HostedObject object{&capsb::Obj::kDescriptor, std::make_shared<NullObj>()};
    timePiece(state, [&] {
      Result<uint32_t> id = table.add(object);
      benchmark::DoNotOptimize(id);
      return id.isOk() && table.release(*id).isOk();
    });
  });
}

// A same-host binding to a real server process, for the pieces that need one.
class LocalBindingSession final : private OwnsNamesDir, public ClientSession<Paper> {
 public:
  static Result<std::unique_ptr<LocalBindingSession>> start() {
    std::unique_ptr<LocalBindingSession> s(new LocalBindingSession());
    ServerSpec spec;
    spec.kind = "lrpc_local";
    spec.cpu = kServerCpu;
    if (Status st = startLocal<Paper>(spec, "paper", s->dir_, TransferMode::kAdaptive, s->server_, s->client_); !st) {
      return st;
    }
    if (Status st = s->client_.null(); !st.isOk()) return st;  // the first call starts the A-stack
    return s;
  }
  const Binding& binding() const { return *client_.binding(); }

 private:
  LocalBindingSession() = default;
};

// A LocalCall made and dropped: it takes an A-stack, its destructor returns it. Out of line, so
// that the timed code is this function as a real stub would inline it, not a loop whose place
// in the benchmark's own function moves with whatever else that function holds (a change
// elsewhere in the file moved this cell by 1.8 ns without changing one instruction here).
[[gnu::noinline]] bool takeAndReturn(const Binding& binding, const CallOptions& options) {
  LocalCall call(binding, Paper::kNull, options);
  return call.status().isOk();
}

// The same for a PlainCall, the lane a call with no tail and no capability takes (the stub
// tries it first): false if it is not ready, which would mean the benchmark's Null calls do
// not take it either.
[[gnu::noinline]] bool takeAndReturnPlain(const Binding& binding, const CallOptions& options) {
  PlainCall call(binding, Paper::kNull, options);
  return call.ready();
}

// Cost/astack takes the thread's cached A-stack; Cost/astackPool first holds it in an outer
// call, so that the timed ones come from the shared pool; Cost/astackPlain takes it as a
// PlainCall does.
enum class Take { kCached, kPool, kPlain };
void addAStack(BenchContext& ctx, const char* name, Take take) {
  benchmark::RegisterBenchmark(name, [&ctx, take](benchmark::State& state) {
    Result<LocalBindingSession*> session =
        ctx.sessions.get<LocalBindingSession>("Cost/astack", [] { return LocalBindingSession::start(); });
    if (!session) {
      state.SkipWithError(session.status().toString().c_str());
      return;
    }
    const Binding& binding = session.value()->binding();
    const CallOptions options = withDeadline();
    std::optional<LocalCall> outer;
    if (take == Take::kPool) outer.emplace(binding, Paper::kNull, options);
    if (take == Take::kPlain) {
      timePiece(state, [&] { return takeAndReturnPlain(binding, options); });
    } else {
      timePiece(state, [&] { return takeAndReturn(binding, options); });
    }
  });
}
#endif

}  // namespace

void registerBreakdown(BenchContext& ctx) {
#if LRPC_BENCH_LOCAL
  addAStack(ctx, "Cost/astack", Take::kCached);
  addAStack(ctx, "Cost/astackPool", Take::kPool);
  addAStack(ctx, "Cost/astackPlain", Take::kPlain);
  addCapDispatch();
  addCapExport();
#else
  (void)ctx;
#endif
  addPause();
  addResult();
  for (Call call : kCalls) addDispatch(call);
}

#else
void registerBreakdown(BenchContext&) {}
#endif  // LRPC_BENCH_DIRECT

}  // namespace lrpc::bench
