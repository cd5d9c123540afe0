// A hand-written service in the shape the stub generator emits (frame structs, PDL,
// descriptor, dispatch), so the transport is tested on its own, without capnpc-lrpc.
#pragma once

#include <atomic>
#include <cstring>
#include <map>
#include <thread>

#include "runtime/base/mutex.h"
#include "runtime/stub_support.h"

namespace lrpc::net::testing {

struct Svc {
  enum : uint32_t { kNull = 0, kAdd = 1, kBigInOut = 2, kEcho = 3, kFail = 4, kToken = 5, kSlow = 6, kQuery = 7, kSlowToken = 8, kCount };
  struct AddArgs { int32_t a, b; };
  struct AddResults { int32_t sum; };
  struct Big { uint8_t bytes[200]; };
  struct EchoArgs { VarRef data; uint32_t salt; uint32_t pad; };
  struct EchoResults { VarRef data; uint64_t sum; };
  struct TokenArgs { uint64_t token; };
  struct SlowArgs { uint32_t millis; };
  struct SlowTokenArgs { uint64_t token; uint32_t millis; uint32_t pad; };

  static constexpr ProcedureDescriptor kProcedures[] = {
      {0, 0, "null", 0, 0, 8, 5, 0, false},
      {1, 1, "add", 8, 4, 8, 5, 8, false},
      {2, 2, "bigInOut", 200, 200, 8, 5, 200, false},
      {3, 3, "echo", sizeof(EchoArgs), sizeof(EchoResults), 8, 5, 1500, true},
      {4, 4, "fail", 0, 0, 8, 5, 0, false},
      {5, 5, "token", 8, 8, 8, 5, 8, false},
      {6, 6, "slow", 4, 0, 8, 5, 4, false},
      {7, 7, "query", 8, 8, 8, 5, 8, false},
      {8, 8, "slowToken", sizeof(SlowTokenArgs), 8, 8, 5, sizeof(SlowTokenArgs), false},
  };

  // The server object the dispatch function receives.
  struct Impl {
    std::atomic<uint64_t> calls{0};
    Mutex mu;
    std::map<uint64_t, int> tokens LRPC_GUARDED_BY(mu);  // token -> executions (must stay 1)
    int executions(uint64_t t) {
      MutexLock lock(mu);
      auto it = tokens.find(t);
      return it == tokens.end() ? 0 : it->second;
    }
  };

  static Status dispatch(void* self, uint32_t procedure, ServerCall& call) noexcept {
    auto* impl = static_cast<Impl*>(self);
    impl->calls.fetch_add(1);
    auto args = call.args();
    switch (procedure) {
      case kNull: return {};
      case kAdd: {
        AddArgs a;
        std::memcpy(&a, args.data(), sizeof a);
        // Wraps like the generated Paper handler would, instead of signed overflow (UB) on fuzzed input.
        AddResults r{static_cast<int32_t>(static_cast<uint32_t>(a.a) + static_cast<uint32_t>(a.b))};
        std::memcpy(call.results(), &r, sizeof r);
        return {};
      }
      case kBigInOut: {
        Big b;
        std::memcpy(&b, args.data(), sizeof b);
        for (auto& x : b.bytes) x ^= 0x5a;
        std::memcpy(call.results(), &b, sizeof b);
        return {};
      }
      case kEcho: {
        EchoArgs a;
        std::memcpy(&a, args.data(), sizeof a);
        auto tail = call.argTail();
        if (!detail::varRefOk(a.data, tail.size(), 1)) return Status(Errc::kBadFrame, "echo ref");
        auto out = call.resultTail(a.data.length);
        if (!out) return out.status();
        uint64_t sum = 0;
        for (uint32_t i = 0; i < a.data.length; ++i) {
          std::byte v = tail[a.data.offset + i] ^ std::byte(a.salt & 0xff);
          (*out)[i] = v;
          sum += static_cast<uint8_t>(v);
        }
        EchoResults r{{0, a.data.length}, sum};
        std::memcpy(call.results(), &r, sizeof r);
        return {};
      }
      case kFail: return Status(Errc::kApplication, "handler says no");
      case kToken: {
        TokenArgs a;
        std::memcpy(&a, args.data(), sizeof a);
        {
          MutexLock lock(impl->mu);
          ++impl->tokens[a.token];
        }
        uint64_t r = a.token * 3;
        std::memcpy(call.results(), &r, sizeof r);
        return {};
      }
      case kSlow: {
        SlowArgs a;
        std::memcpy(&a, args.data(), sizeof a);
        std::this_thread::sleep_for(std::chrono::milliseconds(a.millis));
        return {};
      }
      case kSlowToken: {  // counts the token, then sleeps: a long handler that must run once
        SlowTokenArgs a;
        std::memcpy(&a, args.data(), sizeof a);
        {
          MutexLock lock(impl->mu);
          ++impl->tokens[a.token];
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(a.millis));
        uint64_t r = a.token * 3;
        std::memcpy(call.results(), &r, sizeof r);
        return {};
      }
      case kQuery: {  // how often `token` ran: lets a test read counts from a server process
        uint64_t token;
        std::memcpy(&token, args.data(), sizeof token);
        uint64_t n = static_cast<uint64_t>(impl->executions(token));
        std::memcpy(call.results(), &n, sizeof n);
        return {};
      }
      default: return Status(Errc::kInvalidArgument, "no such procedure");
    }
  }

  static constexpr InterfaceDescriptor kDescriptor = {"test_service.h:Svc", 0x9a1b2c3d4e5f6071ull, 0x1122334455667788ull,
                                                      kProcedures, kCount, &Svc::dispatch};
};

// Client helpers over any remote Binding (what generated client methods do).
inline Status callNull(const Binding& b, CallOptions o = {}) {
  RemoteCall c(b, Svc::kNull, o);
  if (!c.status().isOk()) return c.status();
  return c.invoke();
}

inline Result<int32_t> callAdd(const Binding& b, int32_t x, int32_t y, CallOptions o = {}) {
  RemoteCall c(b, Svc::kAdd, o);
  Svc::AddArgs a{x, y};
  std::memcpy(c.args(), &a, sizeof a);
  if (Status s = c.invoke(); !s.isOk()) return s;
  Svc::AddResults r;
  std::memcpy(&r, c.results(), sizeof r);
  return r.sum;
}

inline Result<uint64_t> callToken(const Binding& b, uint64_t token, CallOptions o = {}) {
  RemoteCall c(b, Svc::kToken, o);
  std::memcpy(c.args(), &token, sizeof token);
  if (Status s = c.invoke(); !s.isOk()) return s;
  uint64_t r;
  std::memcpy(&r, c.results(), sizeof r);
  return r;
}

// A call that takes `millis` on the server; returns token * 3 (the server counts the token).
inline Result<uint64_t> callSlowToken(const Binding& b, uint64_t token, uint32_t millis, CallOptions o = {}) {
  RemoteCall c(b, Svc::kSlowToken, o);
  Svc::SlowTokenArgs a{token, millis, 0};
  std::memcpy(c.args(), &a, sizeof a);
  if (Status s = c.invoke(); !s.isOk()) return s;
  uint64_t r;
  std::memcpy(&r, c.results(), sizeof r);
  return r;
}

inline Result<uint64_t> queryToken(const Binding& b, uint64_t token) {
  RemoteCall c(b, Svc::kQuery, {});
  std::memcpy(c.args(), &token, sizeof token);
  if (Status s = c.invoke(); !s.isOk()) return s;
  uint64_t r;
  std::memcpy(&r, c.results(), sizeof r);
  return r;
}

// Echoes `data` XOR salt; checks the reply and returns the sum of its bytes.
inline Result<uint64_t> callEcho(const Binding& b, std::span<const std::byte> data, uint8_t salt, CallOptions o = {}) {
  RemoteCall c(b, Svc::kEcho, o);
  auto tail = c.argTail(data.size());
  if (!tail) return tail.status();
  if (!data.empty()) std::memcpy(tail->data(), data.data(), data.size());
  Svc::EchoArgs a{{0, static_cast<uint32_t>(data.size())}, salt, 0};
  std::memcpy(c.args(), &a, sizeof a);
  if (Status s = c.invoke(); !s.isOk()) return s;
  Svc::EchoResults r;
  std::memcpy(&r, c.results(), sizeof r);
  auto rt = c.resultTail();
  if (!detail::varRefOk(r.data, rt.size(), 1) || r.data.length != data.size()) {
    return Status(Errc::kBadFrame, "echo reply ref");
  }
  for (size_t i = 0; i < data.size(); ++i) {
    if (rt[r.data.offset + i] != (data[i] ^ std::byte(salt))) return Status(Errc::kBadFrame, "echo byte mismatch");
  }
  return r.sum;
}

inline std::vector<std::byte> pattern(size_t n, uint32_t seed) {
  std::vector<std::byte> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    v[i] = std::byte(x >> 24);
  }
  return v;
}

}  // namespace lrpc::net::testing
