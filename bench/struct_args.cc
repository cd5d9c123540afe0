#include "bench/struct_args.h"

#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bench/lrpc_common.h"
#include "bench/lrpc_sessions.h"
#include "bench/paired.h"

#if LRPC_BENCH_LOCAL || LRPC_BENCH_NET
#include "struct_args.lrpc.h"  // lrpc_generate(lrpc_bench .../struct_args.capnp)
#endif

namespace lrpc::bench {

#if LRPC_BENCH_LOCAL || LRPC_BENCH_NET
namespace {

using structargs::Rec;
using structargs::StructArgs;

enum class Form { kStruct, kFlat, kView };

constexpr const char* formName(Form f) {
  return f == Form::kStruct ? "StructArgs" : f == Form::kFlat ? "FlatArgs" : "StructView";
}

// The values of every call, built once per benchmark outside the timed loop: two Text of 16
// and 24 bytes (both past std::string's inline buffer) and a List(Int32) of 8.
Rec makeRec() {
  Rec r;
  r.name = "lrpc-bench-name.";          // 16 bytes
  r.note = "a note of twenty-four b.";  // 24 bytes
  r.nums = {1, 2, 3, 4, 5, 6, 7, 8};
  return r;
}

// Both methods return what they were given; each builds its result from its arguments.
class StructArgsImpl final : public StructArgs::Server {
 public:
  Result<Rec> structEcho(const Rec& r) override { return r; }
  Result<Rec> viewEcho(const Rec::View& r) override { return ownedOf(r); }
  Result<StructArgs::FlatEchoResults> flatEcho(std::string_view name, std::string_view note,
                                               std::span<const int32_t> nums) override {
    return StructArgs::FlatEchoResults{std::string(name), std::string(note),
                                       std::vector<int32_t>(nums.begin(), nums.end())};
  }
};

class StructArgsSession : public ClientSession<StructArgs> {
 public:
  static constexpr const char* kName = "structargs";
  static constexpr const char* kLocalKind = "structargs_local";
  static constexpr const char* kNetKind = "structargs_net";

  // One call of each form with `in`'s values, the reply checked against them.
  bool structEcho(const Rec& in) {
    Result<Rec> r = client_.structEcho(in);
    return r && *r == in;
  }
  bool viewEcho(const Rec& in) {
    Rec::View v;  // views of in's bytes: nothing allocated to pass them
    v.name = in.name;
    v.note = in.note;
    v.nums = in.nums;
    Result<Rec> r = client_.viewEcho(v);
    return r && *r == in;
  }
  bool flatEcho(const Rec& in) {
    Result<StructArgs::FlatEchoResults> r = client_.flatEcho(in.name, in.note, in.nums);  // views of in's bytes
    return r && r->name == in.name && r->note == in.note && r->nums == in.nums;
  }
};

// Returns `loop(once)` with `once` one call of `form` (false when it failed or came back
// wrong), so that each loop is compiled per form, as withCall does for the four calls. The
// first number counts the calls, so that every reply is checked against this call's values.
template <class S, class Loop>
auto withForm(S& client, Form form, Rec& rec, Loop&& loop) {
  auto next = [&rec] { rec.nums[0] = static_cast<int32_t>(static_cast<uint32_t>(rec.nums[0]) + 1); };
  if (form == Form::kStruct) {
    return loop([&] {
      next();
      return client.structEcho(rec);
    });
  }
  if (form == Form::kView) {
    return loop([&] {
      next();
      return client.viewEcho(rec);
    });
  }
  return loop([&] {
    next();
    return client.flatEcho(rec);
  });
}

// Registers StructArgs/<path>, FlatArgs/<path>, StructView/<path>, StructArgs/paired_<path>_flat
// and StructView/paired_<path>_flat, all on one server (the same session), so that every form
// calls the same process.
template <class S, class Make>
void addForms(BenchContext& ctx, const std::string& path, Make make) {
  std::string key = "structargs/" + path;
  for (Form form : {Form::kStruct, Form::kFlat, Form::kView}) {
    std::string name = std::string(formName(form)) + "/" + path;
    benchmark::RegisterBenchmark(name.c_str(), [&ctx, key, form, make](benchmark::State& state) {
      Result<S*> session = ctx.sessions.get<S>(key, make);
      if (!session) {
        state.SkipWithError(session.status().toString().c_str());
        return;
      }
      S& client = *session.value();
      const ServerProcess* server = client.server();
      Rec rec = makeRec();
      uint64_t clientCpu0 = processCpuNs();
      uint64_t serverCpu0 = server->cpuNs();
      bool ok = withForm(client, form, rec, [&state](auto once) {
        for (auto _ : state) {
          if (!once()) return false;
        }
        return true;
      });
      uint64_t clientCpu = processCpuNs() - clientCpu0;
      uint64_t serverCpu = server->cpuNs() - serverCpu0;
      if (!ok) {
        state.SkipWithError("call failed or returned a wrong result");
        return;
      }
      state.counters["client_cpu_ns"] =
          benchmark::Counter(static_cast<double>(clientCpu), benchmark::Counter::kAvgIterations);
      state.counters["server_cpu_ns"] =
          benchmark::Counter(static_cast<double>(serverCpu), benchmark::Counter::kAvgIterations);
    })->UseRealTime();
  }
  // Paired: bursts of forms a and b alternate on the session (a_ns: a, b_ns: b).
  auto addPair = [&ctx, key, make](const std::string& pairName, Form a, Form b) {
    benchmark::RegisterBenchmark(pairName.c_str(), [&ctx, key, make, a, b](benchmark::State& state) {
      Result<S*> session = ctx.sessions.get<S>(key, make);
      if (!session) {
        state.SkipWithError(session.status().toString().c_str());
        return;
      }
      S& client = *session.value();
      Rec rec = makeRec();
      auto burst = [&](Form form) {
        return withForm(client, form, rec, [](auto once) {
          return timedBurst(once, paired::kWarmUp, paired::kBurstCalls);
        });
      };
      paired::rounds(state, [&] { return burst(a); }, [&] { return burst(b); });
    })->UseManualTime();
  };
  addPair("StructArgs/paired_" + path + "_flat", Form::kStruct, Form::kFlat);
  addPair("StructView/paired_" + path + "_flat", Form::kView, Form::kFlat);
}

#if LRPC_BENCH_LOCAL
using StructArgsLocal = LocalSession<StructArgsSession>;
#endif
#if LRPC_BENCH_NET
using StructArgsNet = NetSession<StructArgsSession>;
#endif

}  // namespace

void registerStructArgs(BenchContext& ctx) {
#if LRPC_BENCH_LOCAL
  addForms<StructArgsLocal>(ctx, "lrpc", [] { return StructArgsLocal::start(TransferMode::kAdaptive); });
#endif
#if LRPC_BENCH_NET
  addForms<StructArgsNet>(ctx, "net_veth", [&ctx]() -> Result<std::unique_ptr<StructArgsNet>> {
    Result<const NetnsPair*> netns = ctx.netns();
    if (!netns) return netns.status();
    return StructArgsNet::start(net::ReceiveMode::kBusyPoll, netns.value());
  });
#endif
  (void)ctx;
}

int serveStructArgsLocal(int readyFd, int argc, char** argv) {
  return serveLocal<StructArgs>(readyFd, argc, argv, [] { return std::make_unique<StructArgsImpl>(); });
}

int serveStructArgsNet(int readyFd, int argc, char** argv) {
  return serveNet<StructArgs>(readyFd, argc, argv, [] { return std::make_unique<StructArgsImpl>(); });
}

#else  // neither layer in this build

void registerStructArgs(BenchContext&) {}
int serveStructArgsLocal(int, int, char**) { return 2; }
int serveStructArgsNet(int, int, char**) { return 2; }

#endif

}  // namespace lrpc::bench
