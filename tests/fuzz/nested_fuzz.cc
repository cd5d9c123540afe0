// libFuzzer entry point: arbitrary bytes as a request frame for the generated dispatch of the
// nested-value schemas (tests/types: contacts.capnp, json_value.capnp), or as a reply frame
// read by their generated clients. Structs inside structs, unions, recursion (through Lists and
// through lrpc::Box) and lists of lists are read by runtime/codec.h: whatever the bytes, the
// answer is a Status, never a read out of bounds, a crash, unbounded recursion or allocation.
// Input format: as dispatch_fuzz.h; procedures 0-4 are Json's, 5-10 Contacts'.
#include <algorithm>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tests/fuzz/dispatch_fuzz.h"
#include "tests/testing/in_process_channel.h"
#include "tests/types/types_impl.h"

namespace {

using lrpc::testing::ReplayChannel;

constexpr uint32_t kJson = jsonv::Json::kProcedureCount;
constexpr uint32_t kProcedures = kJson + contacts::Contacts::kProcedureCount;

template <class Iface>
typename Iface::Client replayClient(std::span<const std::byte> reply) {
  auto channel = std::make_shared<ReplayChannel>(reply);
  lrpc::CallChannel* raw = channel.get();
  return typename Iface::Client(std::make_shared<lrpc::Binding>(Iface::kDescriptor, raw, channel));
}

// Calls `procedure` through the generated client with `reply` as the server's answer.
lrpc::Status runClient(uint32_t procedure, std::span<const std::byte> reply) {
  if (procedure < kJson) {
    auto c = replayClient<jsonv::Json>(reply);
    switch (procedure) {
      case jsonv::Json::kEcho: return c.echo(jsonv::Value{}).status();
      case jsonv::Json::kCount: return c.count(jsonv::Tree{"t", {}}).status();
      case jsonv::Json::kShallow: return c.shallow(jsonv::Tree{"t", {}}).status();
      case jsonv::Json::kEval: return c.eval(lrpc::testing::literal(1)).status();
      default: return c.deepen(2).status();
    }
  }
  auto c = replayClient<contacts::Contacts>(reply);
  const std::vector<std::string_view> names{"a"};
  const std::vector<std::vector<int32_t>> m{{1}};
  const std::vector<std::vector<std::string>> w{{"x"}};
  switch (procedure - kJson) {
    case contacts::Contacts::kAdd: return c.add(contacts::Person{}).status();
    case contacts::Contacts::kGet: return c.get(1).status();
    case contacts::Contacts::kFindAll: return c.findAll(names).status();
    case contacts::Contacts::kShapes: return c.shapes({}).status();
    case contacts::Contacts::kMatrix: return c.matrix(m, w).status();
    default: return c.rename(1, "x");
  }
}

template <class Iface>
lrpc::Status runServer(typename Iface::Server& impl, uint32_t procedure, std::span<const std::byte> fixed,
                       std::span<const std::byte> tail, std::vector<std::byte>& reply) {
  const uint32_t resultsSize = procedure < Iface::kProcedureCount ? Iface::kProcedures[procedure].resultsSize : 0;
  lrpc::testing::BufferServerCall call(fixed, tail, resultsSize);
  lrpc::Status s = Iface::Server::dispatch(static_cast<typename Iface::Server*>(&impl), procedure, call);
  if (s.isOk()) {
    if (call.results.size() != resultsSize) __builtin_trap();  // dispatch must not resize the results
    reply = call.results;
    reply.insert(reply.end(), call.tail.begin(), call.tail.end());
  }
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lrpc::testing::FuzzFrame in;
  if (!lrpc::testing::readFuzzInput(data, size, kProcedures, in)) return 0;
  if (in.procedure >= kProcedures) return 0;

  if (in.clientMode) {
    const std::vector<std::byte> reply = in.joined();
    (void)runClient(in.procedure, reply);
    return 0;
  }
  std::vector<std::byte> reply;
  lrpc::Status s;
  if (in.procedure < kJson) {
    lrpc::testing::JsonImpl impl;
    s = runServer<jsonv::Json>(impl, in.procedure, in.fixed, in.tail, reply);
  } else {
    lrpc::testing::ContactsImpl impl;
    contacts::Person p;
    p.name = "a";
    (void)impl.add(p);  // so that get and findAll return a person
    s = runServer<contacts::Contacts>(impl, in.procedure - kJson, in.fixed, in.tail, reply);
  }
  // What the generated server writes, the generated client must accept.
  if (s.isOk() && !runClient(in.procedure, reply).isOk()) __builtin_trap();
  return 0;
}
