// One implementation of every method in every_type.capnp, usable as the server of any of its
// interfaces: EveryTypeImpl<Scalars::Server>, ..., EveryTypeImpl<Everything::Server>. The
// methods deliberately have no `override`: each instantiation overrides the ones its base
// declares and leaves the rest as plain members. Handlers echo, so a test can compare what
// came back with what it sent; `calls` counts handler runs.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "every_type.lrpc.h"

namespace lrpc::testing {

// 64-bit FNV-1a: what Blobs.digest answers, for tests to compare with. `h`: the hash of the
// bytes before `d`, for a value hashed in parts.
inline uint64_t fnv1a(std::span<const uint8_t> d, uint64_t h = 0xcbf29ce484222325ull) {
  for (uint8_t b : d) h = (h ^ b) * 0x100000001b3ull;
  return h;
}

template <class Base>
class EveryTypeImpl final : public Base {
 public:
  // Scalars
  Result<bool> echoBool(bool v) { return count(v); }
  Result<Scalars::AllIntsResults> allInts(int8_t a, int16_t b, int32_t c, int64_t d, uint8_t e, uint16_t f,
                                          uint32_t g, uint64_t h) {
    return count(Scalars::AllIntsResults{a, b, c, d, e, f, g, h});
  }
  Result<Scalars::FloatsResults> floats(float f, double d) { return count(Scalars::FloatsResults{f, d}); }
  Result<Scalars::EnumsResults> enums(Mood m, base::Color c) { return count(Scalars::EnumsResults{m, c}); }
  Result<Outer> outer(const Outer& o) { return count(o); }
  Status nothing() {
    ++calls;
    return {};
  }
  Status fail(uint32_t how) {
    ++calls;
    if (how == 1) return Status(Errc::kApplication, "failed on purpose");
    if (how == 2) throw std::runtime_error("boom");
    if (how == 3) throw 42;
    if (how == 4) return Status(Errc::kApplication, std::string(1000, 'x') + " and the end");
    if (how == 5) return Status(Errc::kApplication);  // no detail
    return {};
  }

  // Echo and Blobs
  Result<uint64_t> ping(uint64_t n) { return count(n + 1); }
  Result<std::string> text(std::string_view t) { return count(std::string(t)); }
  // Built in lrpc::resultBuffer(), so every echo test also checks that a kept buffer never
  // brings an earlier call's bytes back.
  Result<std::vector<uint8_t>> data(std::span<const uint8_t> d) {
    std::vector<uint8_t> out = lrpc::resultBuffer();
    out.assign(d.begin(), d.end());
    return count(std::move(out));
  }
  Result<std::string> limited(std::string_view t) {
    if (t == "grow") return count(std::string(17, 'g'));
    return count(std::string(t));
  }
  // The Data result through lrpc::takeArgument: the argument's own copy where the path made one
  // (every mixed() test then checks that it carries the bytes exactly), else a copy.
  Result<Blobs::MixedResults> mixed(uint8_t pre, std::string_view t, bool mid, std::span<const uint8_t> d, int64_t post) {
    return count(Blobs::MixedResults{static_cast<uint64_t>(pre + t.size() + d.size() + static_cast<uint64_t>(post)),
                                     std::string(t), lrpc::takeArgument(d), mid});
  }

  Result<Blobs::DigestResults> digest(std::span<const uint8_t> d) {
    return count(Blobs::DigestResults{fnv1a(d), d.size()});
  }

  // Lists
  Result<std::vector<int32_t>> ints(std::span<const int32_t> v) { return count(std::vector<int32_t>(v.begin(), v.end())); }
  Result<std::vector<bool>> bools(std::span<const bool> v) { return count(std::vector<bool>(v.begin(), v.end())); }
  Result<std::vector<Mood>> moods(std::span<const Mood> v) { return count(std::vector<Mood>(v.begin(), v.end())); }
  Result<std::vector<Outer>> structs(std::span<const Outer> v) { return count(std::vector<Outer>(v.begin(), v.end())); }
  Result<std::vector<std::string>> texts(std::span<const std::string_view> v) {
    return count(std::vector<std::string>(v.begin(), v.end()));
  }
  Result<std::vector<std::vector<uint8_t>>> datas(std::span<const std::span<const uint8_t>> v) {
    std::vector<std::vector<uint8_t>> out;
    for (auto d : v) out.emplace_back(d.begin(), d.end());
    return count(std::move(out));
  }
  Result<std::vector<uint64_t>> u64s(std::span<const uint64_t> v) { return count(std::vector<uint64_t>(v.begin(), v.end())); }
  Result<uint32_t> limitedTexts(std::span<const std::string_view> v) { return count(static_cast<uint32_t>(v.size())); }

  // Everything
  Result<std::string> self() { return count(std::string("Everything")); }

  std::atomic<int> calls{0};  // handlers of different A-stacks run on different server threads

 private:
  template <class T>
  T count(T v) {
    ++calls;
    return v;
  }
};

}  // namespace lrpc::testing
