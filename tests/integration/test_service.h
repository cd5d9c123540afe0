// A hand-written interface in the shape capnpc-lrpc generates (stubgen/generated_code.md), so
// that the runtime is tested on its own: null, add, echo (Data in and out: inline or
// out-of-band tails), sleepMs (a slow handler), fail (a handler that throws).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <stdexcept>
#include <thread>
#include <vector>

#include "runtime/stub_support.h"

namespace lrpc::testing {

struct TestService {
  TestService() = delete;
  struct AddArgs {
    int32_t a;
    int32_t b;
  };
  struct AddResults {
    int32_t sum;
  };
  struct EchoArgs {
    ::lrpc::VarRef data;
  };
  struct EchoResults {
    ::lrpc::VarRef data;
  };
  struct SleepArgs {
    uint32_t ms;
  };
  struct SleepResults {
    uint32_t ms;
  };

  static constexpr uint32_t kNull = 0, kAdd = 1, kEcho = 2, kSleepMs = 3, kFail = 4;
  static constexpr ::lrpc::ProcedureDescriptor kProcedures[] = {
      {0, 0, "null", 0, 0, 8, 5, 0, false},
      {1, 1, "add", sizeof(AddArgs), sizeof(AddResults), 4, 5, 8, false},
      {2, 2, "echo", sizeof(EchoArgs), sizeof(EchoResults), 8, 5, 1508, true},
      {3, 3, "sleepMs", sizeof(SleepArgs), sizeof(SleepResults), 4, 1, 4, false},  // one A-stack: reuse is forced
      {4, 4, "fail", 0, 0, 8, 2, 0, false},
  };
  static Status dispatch(void* self, uint32_t procedure, ServerCall& call) noexcept;
  static constexpr ::lrpc::InterfaceDescriptor kDescriptor = {
      "test_service.h:TestService", 0xa11ce5e41ce00001ull, 0x5157a7e5ull, kProcedures, 5, &TestService::dispatch};

  class Server;
  class Client;
};

class TestService::Server {
 public:
  virtual ~Server() = default;
  virtual Status null() { return {}; }
  virtual Result<int32_t> add(int32_t a, int32_t b) {
    return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));  // wraps: a peer picks a and b
  }
  virtual Result<std::vector<uint8_t>> echo(std::span<const uint8_t> data) {
    return std::vector<uint8_t>(data.begin(), data.end());
  }
  virtual Result<uint32_t> sleepMs(uint32_t ms) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    return ms;
  }
  virtual Status fail() { throw std::runtime_error("the handler gave up"); }
};

inline Status TestService::dispatch(void* self, uint32_t procedure, ServerCall& call) noexcept {
  auto* server = static_cast<Server*>(self);
  try {
    switch (procedure) {
      case kNull:
        return server->null();
      case kAdd: {
        AddArgs a;
        std::memcpy(&a, call.args().data(), sizeof a);
        Result<int32_t> r = server->add(a.a, a.b);
        if (!r.isOk()) return r.status();
        AddResults out{*r};
        std::memcpy(call.results(), &out, sizeof out);
        return {};
      }
      case kEcho: {
        EchoArgs a;
        std::memcpy(&a, call.args().data(), sizeof a);
        if (!detail::varRefOk(a.data, call.argTail().size(), 1)) return Status(Errc::kBadFrame, "echo: bad data ref");
        std::vector<uint8_t> copy;  // copy "E": the client may still write the A-stack (or stream)
        if (Status s = detail::copyArgBytes(call, call.argTail(), a.data, copy); !s.isOk()) return s;
        Result<std::vector<uint8_t>> r = server->echo(copy);
        if (!r.isOk()) return r.status();
        Result<std::span<std::byte>> tail = call.resultTail(r->size());
        if (!tail.isOk()) return tail.status();
        if (!r->empty()) std::memcpy(tail->data(), r->data(), r->size());
        EchoResults out{{0, static_cast<uint32_t>(r->size())}};
        std::memcpy(call.results(), &out, sizeof out);
        return {};
      }
      case kSleepMs: {
        SleepArgs a;
        std::memcpy(&a, call.args().data(), sizeof a);
        Result<uint32_t> r = server->sleepMs(a.ms);
        if (!r.isOk()) return r.status();
        SleepResults out{*r};
        std::memcpy(call.results(), &out, sizeof out);
        return {};
      }
      case kFail:
        return server->fail();
      default:
        return Status(Errc::kBadFrame, "no such procedure");
    }
  } catch (...) {
    return detail::handlerThrew(kProcedures[procedure < 5 ? procedure : 0].name);
  }
}

class TestService::Client {
 public:
  Client() = default;
  explicit Client(std::shared_ptr<Binding> b) : binding_(std::move(b)) {}
  Client withOptions(const CallOptions& o) const {
    Client c(binding_);
    c.options_ = o;
    return c;
  }
  const std::shared_ptr<Binding>& binding() const { return binding_; }

  // As generated code calls a method with no tail and no capability: a PlainCall where it can
  // start, else a LocalCall (runtime/plain_call.h); both through the same Via.
  Status null() {
    if (PlainCall call(*binding_, kNull, options_); call.ready()) return nullVia(call);
    LocalCall call(*binding_, kNull, options_);
    return nullVia(call);
  }
  Result<int32_t> add(int32_t a, int32_t b) {
    if (PlainCall call(*binding_, kAdd, options_); call.ready()) return addVia(call, a, b);
    LocalCall call(*binding_, kAdd, options_);
    return addVia(call, a, b);
  }
  Result<std::vector<uint8_t>> echo(std::span<const uint8_t> data) {
    LocalCall call(*binding_, kEcho, options_);
    if (!call.status().isOk()) return call.status();
    // As generated code does: the fixed part first, then the tail (which may be streamed).
    EchoArgs args{{0, static_cast<uint32_t>(data.size())}};
    std::memcpy(call.args(), &args, sizeof args);
    Result<std::span<std::byte>> tail = call.argTail(data.size());
    if (!tail.isOk()) return tail.status();
    if (!data.empty()) call.copyTail(tail->data(), data.data(), data.size());
    if (Status s = call.invoke(); !s.isOk()) return s;
    EchoResults r;
    std::memcpy(&r, call.results(), sizeof r);
    std::span<const std::byte> out = call.resultTail();
    if (!detail::varRefOk(r.data, out.size(), 1)) return Status(Errc::kBadFrame, "echo: bad result ref");
    const auto* p = reinterpret_cast<const uint8_t*>(out.data()) + r.data.offset;
    return std::vector<uint8_t>(p, p + r.data.length);
  }
  Result<uint32_t> sleepMs(uint32_t ms) {
    if (PlainCall call(*binding_, kSleepMs, options_); call.ready()) return sleepMsVia(call, ms);
    LocalCall call(*binding_, kSleepMs, options_);
    return sleepMsVia(call, ms);
  }
  Status fail() {
    if (PlainCall call(*binding_, kFail, options_); call.ready()) return nullVia(call);
    LocalCall call(*binding_, kFail, options_);
    return nullVia(call);
  }

 private:
  template <Call C>
  static Status nullVia(C& call) {  // null() and fail(): nothing in, nothing out
    if (!call.status().isOk()) return call.status();
    return call.invoke();
  }
  template <Call C>
  static Result<int32_t> addVia(C& call, int32_t a, int32_t b) {
    if (!call.status().isOk()) return call.status();
    AddArgs args{a, b};
    std::memcpy(call.args(), &args, sizeof args);
    if (Status s = call.invoke(); !s.isOk()) return s;
    AddResults r;
    std::memcpy(&r, call.results(), sizeof r);
    return r.sum;
  }
  template <Call C>
  static Result<uint32_t> sleepMsVia(C& call, uint32_t ms) {
    if (!call.status().isOk()) return call.status();
    SleepArgs args{ms};
    std::memcpy(call.args(), &args, sizeof args);
    if (Status s = call.invoke(); !s.isOk()) return s;
    SleepResults r;
    std::memcpy(&r, call.results(), sizeof r);
    return r.ms;
  }

 private:
  std::shared_ptr<Binding> binding_;
  CallOptions options_;
};

// Same methods, another interface id: importing it from a TestService server must fail.
struct OtherService {
  static Status dispatch(void*, uint32_t, ServerCall&) noexcept { return {}; }
  static constexpr ::lrpc::InterfaceDescriptor kDescriptor = {
      "test_service.h:OtherService", 0xa11ce5e41ce00002ull, 0x5157a7e5ull, TestService::kProcedures, 5,
      &OtherService::dispatch};
};

}  // namespace lrpc::testing
