// libFuzzer entry point: arbitrary bytes as a request frame for the generated dispatch of the
// capability schema (tests/caps/caps.capnp), the tunnel procedure included, against a
// connection table that holds a few live objects; or as a reply frame read by the generated
// clients of methods that return capabilities. Whatever the ids, procedures and inner frames,
// the answer is a Status: never a call on a freed or mistyped object, a crash or a leak.
// Input format: as dispatch_fuzz.h, but the seven procedure bits name an interface and one of its
// procedures: 0-31 Factory's, 32-63 Keeper's, 64-95 Vault's (the rest: out of range). Index 31
// of each is its tunnel, whatever its number, so that a method added to an interface leaves the
// checked-in seeds meaning what their names say; indexes past the procedures are out of range.
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

constexpr uint32_t kPerInterface = 32;
constexpr uint32_t kTunnelIndex = kPerInterface - 1;
enum Iface : uint32_t { kFactory, kKeeper, kVault };

// The procedure number `index` of the fuzz input names in interface I (see the top).
template <class I>
constexpr uint32_t procedureOf(uint32_t index) {
  return index == kTunnelIndex ? I::kProcedureCount - 1 : index;
}
static_assert(caps::Factory::kProcedureCount < kTunnelIndex && caps::Keeper::kProcedureCount < kTunnelIndex &&
              caps::Vault::kProcedureCount < kTunnelIndex);

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

// Calls procedure `index` of interface `iface` through the generated client with `reply` as the
// server's answer, and then (for a capability that came back) a call on it, answered with the
// same bytes.
void runClient(uint32_t iface, uint32_t index, std::span<const std::byte> reply) {
  if (iface == kFactory) {
    auto c = replayClient<caps::Factory>(reply);
    switch (index) {
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
  if (iface == kKeeper) {
    auto k = replayClient<caps::Keeper>(reply);
    if (index == caps::Keeper::kHold) {
      if (auto h = k.hold("h"); h.isOk() && !h->all.empty()) (void)h->all.back().client().label();
    } else {
      (void)k.live();
    }
    return;
  }
  // Untyped capabilities, cast by the client and called.
  auto v = replayClient<caps::Vault>(reply);
  switch (index) {
    case caps::Vault::kGet:
      if (auto r = v.get("x"); r.isOk()) (void)r->castAs<caps::Counter>().add(1);
      return;
    case caps::Vault::kSlots:
      if (auto r = v.slots(); r.isOk() && !r->empty()) {
        (void)lrpc::Capability::Client(r->back().cap).castAs<caps::Special>().twice(1);
      }
      return;
    case caps::Vault::kMake:
      if (auto r = v.make(1); r.isOk()) (void)r->castAs<caps::Counter>().label();
      return;
    default: (void)v.clear(); return;
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
  // 126 + 2: the seven bits as they are.
  if (!lrpc::testing::readFuzzInput(data, size, 126, in)) return 0;
  const uint32_t iface = in.procedure / kPerInterface;
  const uint32_t index = in.procedure % kPerInterface;
  if (iface > kVault) return 0;

  if (in.clientMode) {
    const std::vector<std::byte> reply = in.joined();
    runClient(iface, index, reply);
    return 0;
  }
  // A connection that already handed out a Counter (id 1) and a Factory-made pair (ids 2, 3),
  // one of them released again (id 2 is stale), so that ids name live, stale and absent objects.
  auto live = std::make_shared<std::atomic<uint32_t>>(0);
  lrpc::testing::FactoryImpl factory;  // before the table: the objects it makes go with it
  lrpc::testing::KeeperImpl keeper;
  {
    // Before the table, so after it: what it keeps of the table's objects goes with it.
    lrpc::testing::VaultImpl vault;
    lrpc::CapTable table(8);
    for (int i = 0; i < 3; ++i) {
      auto counter = std::make_shared<lrpc::testing::CounterImpl>(live, "c", i);
      void* self = static_cast<caps::Counter::Server*>(counter.get());
      (void)table.add({&caps::Counter::kDescriptor, std::shared_ptr<void>(counter, self)});
    }
    (void)table.release(2);
    if (iface == kFactory) {
      (void)runServer<caps::Factory>(factory, table, procedureOf<caps::Factory>(index), in.fixed, in.tail);
    } else if (iface == kKeeper) {
      (void)runServer<caps::Keeper>(keeper, table, procedureOf<caps::Keeper>(index), in.fixed, in.tail);
    } else {
      (void)runServer<caps::Vault>(vault, table, procedureOf<caps::Vault>(index), in.fixed, in.tail);
    }
  }
  // Every object went with its table: none leaked, whatever the frame made the server do.
  if (live->load() != 0 || *factory.live() != 0 || *keeper.live() != 0) __builtin_trap();
  return 0;
}
