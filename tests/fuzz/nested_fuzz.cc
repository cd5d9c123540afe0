// libFuzzer entry point: arbitrary bytes as a request frame for the generated dispatch of the
// nested-value schemas (tests/types: contacts.capnp, json_value.capnp), or as a reply frame
// read by their generated clients. Structs inside structs, unions, recursion (through Lists and
// through lrpc::Box) and lists of lists are read by runtime/codec.h: whatever the bytes, the
// answer is a Status, never a read out of bounds, a crash, unbounded recursion or allocation.
// The methods with $Lrpc.views read the same frames as views of a private copy (codec_view.h).
// Input format: as dispatch_fuzz.h; procedures 0-4 are Json's first five, 5-10 Contacts', 11-13
// Json's views, 14-16 Directory's (the corpus's older inputs keep their numbers).
#include <algorithm>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tests/fuzz/dispatch_fuzz.h"
#include "tests/testing/in_process_channel.h"
#include "tests/types/types_impl.h"

namespace {

using lrpc::testing::ReplayChannel;

constexpr uint32_t kJson = 5;  // Json's methods before its views
constexpr uint32_t kContacts = kJson + contacts::Contacts::kProcedureCount;
constexpr uint32_t kJsonViews = kContacts + jsonv::Json::kProcedureCount - kJson;
constexpr uint32_t kProcedures = kJsonViews + contacts::Directory::kProcedureCount;

// Which interface an input's procedure belongs to, and its index there.
enum class Target { kJsonIface, kContactsIface, kDirectoryIface };
std::pair<Target, uint32_t> route(uint32_t procedure) {
  if (procedure < kJson) return {Target::kJsonIface, procedure};
  if (procedure < kContacts) return {Target::kContactsIface, procedure - kJson};
  if (procedure < kJsonViews) return {Target::kJsonIface, procedure - kContacts + kJson};
  return {Target::kDirectoryIface, procedure - kJsonViews};
}

template <class Iface>
typename Iface::Client replayClient(std::span<const std::byte> reply) {
  auto channel = std::make_shared<ReplayChannel>(reply);
  lrpc::CallChannel* raw = channel.get();
  return typename Iface::Client(std::make_shared<lrpc::Binding>(Iface::kDescriptor, raw, channel));
}

// Calls `procedure` through the generated client with `reply` as the server's answer.
lrpc::Status runClient(uint32_t procedure, std::span<const std::byte> reply) {
  const auto [target, index] = route(procedure);
  if (target == Target::kJsonIface) {
    auto c = replayClient<jsonv::Json>(reply);
    switch (index) {
      case jsonv::Json::kEcho: return c.echo(jsonv::Value{}).status();
      case jsonv::Json::kCount: return c.count(jsonv::Tree{"t", {}}).status();
      case jsonv::Json::kShallow: return c.shallow(jsonv::Tree{"t", {}}).status();
      case jsonv::Json::kEval: return c.eval(lrpc::testing::literal(1)).status();
      case jsonv::Json::kEchoView: return c.echoView(jsonv::Value::View{}).status();
      case jsonv::Json::kEvalView: return c.evalView(jsonv::Expr::View{}).status();
      case jsonv::Json::kCountView: return c.countView(jsonv::Tree::View{}).status();
      default: return c.deepen(2).status();
    }
  }
  if (target == Target::kDirectoryIface) {
    auto c = replayClient<contacts::Directory>(reply);
    switch (index) {
      case contacts::Directory::kAdd: return c.add({}, {}, {}, {}, {}, {}, "n").status();
      case contacts::Directory::kShapes: return c.shapes({}, {}, {}, {}).status();
      default: return c.none(1).status();
    }
  }
  auto c = replayClient<contacts::Contacts>(reply);
  const std::vector<std::string_view> names{"a"};
  const std::vector<std::vector<int32_t>> m{{1}};
  const std::vector<std::vector<std::string>> w{{"x"}};
  switch (index) {
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
  const auto [target, index] = route(in.procedure);
  if (target == Target::kJsonIface) {
    lrpc::testing::JsonImpl impl;
    s = runServer<jsonv::Json>(impl, index, in.fixed, in.tail, reply);
  } else if (target == Target::kDirectoryIface) {
    lrpc::testing::DirectoryImpl impl;
    s = runServer<contacts::Directory>(impl, index, in.fixed, in.tail, reply);
  } else {
    lrpc::testing::ContactsImpl impl;
    contacts::Person p;
    p.name = "a";
    (void)impl.add(p);  // so that get and findAll return a person
    s = runServer<contacts::Contacts>(impl, index, in.fixed, in.tail, reply);
  }
  // What the generated server writes, the generated client must accept.
  if (s.isOk() && !runClient(in.procedure, reply).isOk()) __builtin_trap();
  return 0;
}
