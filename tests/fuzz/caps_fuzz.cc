// libFuzzer entry point: arbitrary bytes as a request frame for the generated dispatch of the
// capability schema (tests/caps/caps.capnp), the tunnel procedure included, against a
// connection table that holds a few live objects; or as a reply frame read by the generated
// clients of methods that return capabilities. Whatever the ids, procedures and inner frames,
// the answer is a Status: never a call on a freed or mistyped object, a crash or a leak.
// Input format: as dispatch_fuzz.h; procedures 0-6 are Factory's (6: the tunnel), 7-11 Keeper's.
#include <algorithm>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "runtime/capability.h"
#include "runtime/cap_table.h"
#include "tests/caps/caps_impl.h"
#include "tests/fuzz/dispatch_fuzz.h"
#include "tests/testing/in_process_channel.h"

namespace {

using lrpc::testing::ReplayChannel;

constexpr uint32_t kFactory = caps::Factory::kProcedureCount;
constexpr uint32_t kProcedures = kFactory + caps::Keeper::kProcedureCount;

// A ServerCall over the fuzzed frame with a connection table, as both paths give one.
class TableServerCall final : public lrpc::ServerCall {
 public:
  TableServerCall(std::span<const std::byte> args, std::span<const std::byte> tail, size_t resultsSize,
                  lrpc::CapTable& table)
      : ServerCall(args, tail, nullptr), results(resultsSize), table_(table) {
    results_ = results.data();
  }
  lrpc::Result<std::span<std::byte>> resultTail(size_t n) noexcept override {
    if (taken_ || n > (size_t{1} << 20)) return lrpc::Status(lrpc::Errc::kResourceExhausted);
    taken_ = true;
    written.assign(n, std::byte{0xEE});
    return std::span<std::byte>(written);
  }
  lrpc::CapTable* capTable() noexcept override { return &table_; }

  std::vector<std::byte> results;
  std::vector<std::byte> written;  // the result tail

 private:
  lrpc::CapTable& table_;
  bool taken_ = false;
};

template <class Iface>
typename Iface::Client replayClient(std::span<const std::byte> reply) {
  auto channel = std::make_shared<ReplayChannel>(reply);
  lrpc::CallChannel* raw = channel.get();
  return typename Iface::Client(std::make_shared<lrpc::Binding>(Iface::kDescriptor, raw, channel));
}

// Calls `procedure` through the generated client with `reply` as the server's answer, and then
// (for a capability that came back) a call on it, answered with the same bytes.
void runClient(uint32_t procedure, std::span<const std::byte> reply) {
  if (procedure < kFactory) {
    auto c = replayClient<caps::Factory>(reply);
    switch (procedure) {
      case caps::Factory::kMake:
        if (auto r = c.make("x", 1); r.isOk()) (void)r->add(1);
        return;
      case caps::Factory::kPair:
        if (auto r = c.pair(1, 2); r.isOk()) (void)r->second.add(1);
        return;
      case caps::Factory::kNothing: (void)c.nothing(); return;
      default: (void)c.live(); return;
    }
  }
  auto k = replayClient<caps::Keeper>(reply);
  if (procedure - kFactory == caps::Keeper::kHold) {
    if (auto h = k.hold("h"); h.isOk() && !h->all.empty()) (void)h->all.back().client().label();
  } else {
    (void)k.live();
  }
}

template <class Iface>
lrpc::Status runServer(typename Iface::Server& impl, lrpc::CapTable& table, uint32_t procedure,
                       std::span<const std::byte> fixed, std::span<const std::byte> tail) {
  const uint32_t resultsSize = procedure < Iface::kProcedureCount ? Iface::kProcedures[procedure].resultsSize : 0;
  TableServerCall call(fixed, tail, resultsSize, table);
  lrpc::Status s = Iface::Server::dispatch(static_cast<typename Iface::Server*>(&impl), procedure, call);
  if (s.isOk() && call.results.size() != resultsSize) __builtin_trap();  // dispatch must not resize them
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lrpc::testing::FuzzFrame in;
  if (!lrpc::testing::readFuzzInput(data, size, kProcedures, in)) return 0;
  if (in.procedure >= kProcedures) return 0;

  if (in.clientMode) {
    const std::vector<std::byte> reply = in.joined();
    runClient(in.procedure, reply);
    return 0;
  }
  // A connection that already handed out a Counter (id 1) and a Factory-made pair (ids 2, 3),
  // one of them released again (id 2 is stale), so that ids name live, stale and absent objects.
  auto live = std::make_shared<std::atomic<uint32_t>>(0);
  lrpc::testing::FactoryImpl factory;  // before the table: the objects it makes go with it
  lrpc::testing::KeeperImpl keeper;
  {
    lrpc::CapTable table(8);
    for (int i = 0; i < 3; ++i) {
      auto counter = std::make_shared<lrpc::testing::CounterImpl>(live, "c", i);
      void* self = static_cast<caps::Counter::Server*>(counter.get());
      (void)table.add({&caps::Counter::kDescriptor, std::shared_ptr<void>(counter, self)});
    }
    (void)table.release(2);
    if (in.procedure < kFactory) {
      (void)runServer<caps::Factory>(factory, table, in.procedure, in.fixed, in.tail);
    } else {
      (void)runServer<caps::Keeper>(keeper, table, in.procedure - kFactory, in.fixed, in.tail);
    }
  }
  // Every object went with its table: none leaked, whatever the frame made the server do.
  if (live->load() != 0 || *factory.live() != 0 || *keeper.live() != 0) __builtin_trap();
  return 0;
}
