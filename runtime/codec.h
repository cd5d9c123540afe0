// How variable-size values nest inside a frame's tail: structs with Text, Data, List or
// struct fields, unions and groups, lists of lists. Generated code writes and reads a
// parameter's top-level value itself; everything inside it goes through these templates,
// which the compiler instantiates per type into straight-line code (no reflection), plus four
// functions the generator writes per such struct and finds here by argument-dependent lookup:
//   uint32_t lrpcHead(const S&)   bytes of S's fixed part (a multiple of 8)
//   uint64_t lrpcSize(const S&, uint32_t depth)  bytes of its whole encoding from an 8-aligned
//                                start, or kTooDeep when its values nest more than `depth` levels
//   uint64_t lrpcPut(std::byte* tail, uint64_t at, const S&, CapCodec*)  writes it at `at`,
//                                returns its end
//   bool lrpcGet(Reader&, VarRef, S& fresh)  checks and copies one out of the tail
// A capability inside a value (a Cap<Foo> member or List element) is a uint32 id that the call's
// CapCodec gives and resolves (runtime/capability.h).
// and, for fixed-size structs copied inside lists, lrpcScrub (zero padding) and lrpcFixBools.
//
// Encoding (stubgen/generated_code.md, "Nested values"). A value is named by a VarRef
// {offset from the tail's start, length}: Text and Data are their bytes; a list of fixed-size
// elements is the packed array; a list of variable-size elements is an array of element
// VarRefs, the elements after it; a struct is its fixed part (fields by ordinal, natural
// alignment; a variable field is a VarRef), its values after it. The VarRef's length is the
// fixed part's size, so a newer reader defaults what an older writer did not send and an
// older reader skips what it does not know. Every value starts 8-aligned; writers zero the gaps.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "runtime/base/bulk_copy.h"
#include "runtime/contract.h"

namespace lrpc {



namespace detail {
// Copies the bytes `ref` names (checked against `tail` already) into `out`: assign, one pass,
// where resize and memcpy would zero them first.
inline void copyBytes(std::span<const std::byte> tail, VarRef ref, std::vector<uint8_t>& out) {
  detail::assignBulk(out, tail.data() + ref.offset, ref.length);
}

// Checks that `ref` (already copied out of the frame) names `elemSize`-aligned bytes
// inside a tail of `tailSize` bytes. Used by generated code on both sides.
inline bool varRefOk(VarRef ref, size_t tailSize, size_t elemSize) noexcept {
  return ref.offset <= tailSize && ref.length <= tailSize - ref.offset &&
         (elemSize <= 1 || ref.length % elemSize == 0);
}

// Rounds a tail offset up so that the next value is 8-byte aligned.
constexpr uint32_t alignTail(uint64_t n) noexcept { return static_cast<uint32_t>((n + 7) & ~uint64_t{7}); }
}  // namespace detail

namespace codec {

// Nesting levels a frame may make its reader descend (each struct or list of variable-size
// values is one), so a hostile frame cannot recurse the reader off its stack.
inline constexpr uint32_t kMaxDepth = 64;

constexpr uint64_t align8(uint64_t n) noexcept { return (n + 7) & ~uint64_t{7}; }

// What size() returns for a value that nests deeper than the levels it was given: the writer
// refuses it before writing anything (its reader would refuse it too), and the walk stops there
// instead of recursing as deep as the value goes.
inline constexpr uint64_t kTooDeep = UINT64_MAX;

// `n` grown by a child value of `child` bytes at the next 8-aligned place (kTooDeep stays).
constexpr uint64_t addChild(uint64_t n, uint64_t child) noexcept {
  return n == kTooDeep || child == kTooDeep ? kTooDeep : align8(n) + child;
}

// Gives and resolves the ids of capabilities inside one frame's values, for the side that
// writes or reads it (runtime/capability.h). A failure is kept in `error` (the first one) and
// ends the write or read.
class CapCodec {
 public:
  virtual uint32_t out(const std::shared_ptr<Binding>& cap) noexcept = 0;
  virtual Result<std::shared_ptr<Binding>> in(uint32_t id, const InterfaceDescriptor& iface) noexcept = 0;
  Status error;

 protected:
  ~CapCodec() = default;
};

template <class T>
inline constexpr bool kIsCap = false;
template <class I>
inline constexpr bool kIsCap<Cap<I>> = true;

// A small tail, copied in one go before its values are decoded. Decoding a coded value is a
// chain of dependent loads (the frame, the struct's fixed part, then its fields), and in memory
// another core has just written each link is a cache miss of its own; one bulk copy makes the
// misses overlap instead (StructArgs/paired_lrpc_flat went from 1.12x to 1.00x). A large tail
// is decoded in place, where a second copy would cost more than the misses it saves.
class TailCopy {
 public:
  static constexpr size_t kMaxBytes = 512;
  // `tail`, or this object's copy of it when it is at most kMaxBytes.
  std::span<const std::byte> of(std::span<const std::byte> tail) noexcept {
    if (tail.empty() || tail.size() > kMaxBytes) return tail;
    std::memcpy(bytes_, tail.data(), tail.size());
    return {bytes_, tail.size()};
  }

 private:
  alignas(64) std::byte bytes_[kMaxBytes];  // left uninitialized: only the copied prefix is read
};

// What one frame may still make its reader do. `budget` starts at the tail's size and every
// value read spends its length: the values a writer lays out never overlap, so an honest
// frame fits, while one whose VarRefs name the same bytes again and again (a DAG, a cycle)
// runs out instead of making the reader allocate without bound.
struct Reader {
  std::span<const std::byte> tail;
  uint64_t budget = 0;
  uint32_t depthLeft = kMaxDepth;
  CapCodec* caps = nullptr;  // resolves capability ids; null where the values hold none
  // Where views read out of the tail keep their arrays (runtime/codec_view.h); null where the
  // reader fills owning values, and then a view cannot be read.
  ViewArena* arena = nullptr;

  Reader(std::span<const std::byte> t, uint32_t maxDepth = kMaxDepth, CapCodec* capCodec = nullptr,
         ViewArena* views = nullptr) noexcept
      : tail(t), budget(t.size()), depthLeft(maxDepth), caps(capCodec), arena(views) {}

  // Checks `ref` and spends its bytes.
  bool take(VarRef ref, size_t elemSize) noexcept {
    if (!detail::varRefOk(ref, tail.size(), elemSize) || ref.length > budget) return false;
    budget -= ref.length;
    return true;
  }
  // take(), one level down; leave() comes back up.
  bool enter(VarRef ref, size_t elemSize) noexcept {
    if (depthLeft == 0 || !take(ref, elemSize)) return false;
    --depthLeft;
    return true;
  }
  void leave() noexcept { ++depthLeft; }
  const std::byte* at(VarRef ref) const noexcept { return tail.data() + ref.offset; }
};

// A generated struct encoded by reference (see the top of this file).
template <class T>
concept Coded = requires(const T& v, T& out, Reader& r, VarRef ref, std::byte* t, CapCodec* c) {
  { lrpcHead(v) } -> std::same_as<uint32_t>;
  { lrpcSize(v, uint32_t{0}) } -> std::same_as<uint64_t>;
  { lrpcPut(t, uint64_t{0}, v, c) } -> std::same_as<uint64_t>;
  { lrpcGet(r, ref, out) } -> std::same_as<bool>;
};

template <class T>
inline constexpr bool kIsView = false;
template <class E>
inline constexpr bool kIsView<std::span<const E>> = true;
template <>
inline constexpr bool kIsView<std::string_view> = true;
template <class V>
inline constexpr bool kIsView<BoxView<V>> = true;

// Copied as bytes: numbers, enums and fixed-size generated structs (not views, which are
// trivially copyable too but name their bytes elsewhere).
template <class T>
concept Fixed = std::is_trivially_copyable_v<T> && !Coded<T> && !kIsView<T>;

// A capability's id in a fixed part or an element array; the null capability is 0.
template <class I>
void putCap(std::byte* at, const Cap<I>& c, CapCodec* caps) noexcept {
  // Generated code passes the call's codec wherever a value can hold a capability.
  const uint32_t id = caps != nullptr ? caps->out(c.binding()) : 0;
  std::memcpy(at, &id, sizeof id);
}
template <class I>
bool getCap(Reader& r, const std::byte* at, Cap<I>& out) {
  uint32_t id;
  std::memcpy(&id, at, sizeof id);
  if (r.caps == nullptr) return id == 0;
  Result<std::shared_ptr<Binding>> b = r.caps->in(id, I::kDescriptor);
  if (!b.isOk()) {
    if (r.caps->error.isOk()) r.caps->error = b.status();
    return false;
  }
  out = Cap<I>(std::move(*b));
  return true;
}

// ---- Declarations first: the templates below call each other for nested lists.

// size(v, depth): the levels `v` may still nest (a struct and a List of variable-size values take
// one each, as Reader::enter counts them).
inline uint64_t head(std::string_view v) noexcept { return v.size(); }
inline uint64_t size(std::string_view v, uint32_t) noexcept { return v.size(); }
inline uint64_t put(std::byte* t, uint64_t at, std::string_view v, CapCodec*) noexcept;
inline bool get(Reader& r, VarRef ref, std::string& out);

inline uint64_t head(const std::vector<bool>& v) noexcept { return v.size(); }
inline uint64_t size(const std::vector<bool>& v, uint32_t) noexcept { return v.size(); }
inline uint64_t put(std::byte* t, uint64_t at, const std::vector<bool>& v, CapCodec*) noexcept;
inline bool get(Reader& r, VarRef ref, std::vector<bool>& out);

template <class E> uint64_t head(std::span<const E> v) noexcept;
template <class E> uint64_t size(std::span<const E> v, uint32_t depth) noexcept;
template <class E> uint64_t put(std::byte* t, uint64_t at, std::span<const E> v, CapCodec* caps) noexcept;
template <class E> uint64_t head(const std::vector<E>& v) noexcept { return head(std::span<const E>(v)); }
template <class E> uint64_t size(const std::vector<E>& v, uint32_t depth) noexcept {
  return size(std::span<const E>(v), depth);
}
template <class E> uint64_t put(std::byte* t, uint64_t at, const std::vector<E>& v, CapCodec* caps) noexcept {
  return put(t, at, std::span<const E>(v), caps);
}
template <class E> bool get(Reader& r, VarRef ref, std::vector<E>& out);

template <Coded S> uint64_t head(const S& v) noexcept { return lrpcHead(v); }
template <Coded S> uint64_t size(const S& v, uint32_t depth) noexcept {
  return depth == 0 ? kTooDeep : lrpcSize(v, depth - 1);
}
template <Coded S> uint64_t put(std::byte* t, uint64_t at, const S& v, CapCodec* caps) noexcept {
  return lrpcPut(t, at, v, caps);
}
template <Coded S> bool get(Reader& r, VarRef ref, S& out) { return lrpcGet(r, ref, out); }

// A struct that can contain its holder (lrpc::Box, above): the struct, or when empty a VarRef of
// length 0 (a present struct's fixed part is never empty: it holds at least this Box).
template <Coded S> uint64_t head(const Box<S>& v) noexcept { return v ? head(*v) : 0; }
template <Coded S> uint64_t size(const Box<S>& v, uint32_t depth) noexcept { return v ? size(*v, depth) : 0; }
template <Coded S> uint64_t put(std::byte* t, uint64_t at, const Box<S>& v, CapCodec* caps) noexcept {
  return v ? put(t, at, *v, caps) : at;
}
template <Coded S> bool get(Reader& r, VarRef ref, Box<S>& out) {
  if (ref.length == 0) {
    if (!r.take(ref, 1)) return false;
    out.reset();
    return true;
  }
  return get(r, ref, out.emplace());
}

// A BoxView (runtime/codec_view.h) is written as the Box it views.
template <Coded V> uint64_t head(const BoxView<V>& v) noexcept { return v ? head(*v) : 0; }
template <Coded V> uint64_t size(const BoxView<V>& v, uint32_t depth) noexcept { return v ? size(*v, depth) : 0; }
template <Coded V> uint64_t put(std::byte* t, uint64_t at, const BoxView<V>& v, CapCodec* caps) noexcept {
  return v ? put(t, at, *v, caps) : at;
}

// Writes `v` at the next 8-aligned place from `end` (zeroing the gap), its VarRef into `slot`
// (in a fixed part or an element array); returns where `v` ends. Generated code and the list
// templates place every variable-size value with it.
template <class V>
uint64_t putRef(std::byte* t, uint64_t end, std::byte* slot, const V& v, CapCodec* caps) noexcept {
  const uint64_t at = align8(end);
  if (at != end) std::memset(t + end, 0, at - end);
  const VarRef ref{static_cast<uint32_t>(at), static_cast<uint32_t>(head(v))};
  std::memcpy(slot, &ref, sizeof ref);
  return put(t, at, v, caps);
}

// ---- Definitions.

inline uint64_t put(std::byte* t, uint64_t at, std::string_view v, CapCodec*) noexcept {
  detail::bulkCopy(t + at, v.data(), v.size());
  return at + v.size();
}
inline bool get(Reader& r, VarRef ref, std::string& out) {
  if (!r.take(ref, 1)) return false;
  if (ref.length == 0) {
    out.clear();  // an empty tail has no data pointer to copy from
  } else {
    detail::assignBulk(out, r.at(ref), ref.length);
  }
  return true;
}

inline uint64_t put(std::byte* t, uint64_t at, const std::vector<bool>& v, CapCodec*) noexcept {
  for (size_t i = 0; i < v.size(); ++i) t[at + i] = std::byte{static_cast<uint8_t>(v[i] ? 1 : 0)};
  return at + v.size();
}
inline bool get(Reader& r, VarRef ref, std::vector<bool>& out) {
  if (!r.take(ref, 1)) return false;
  out.resize(ref.length);
  for (size_t i = 0; i < ref.length; ++i) out[i] = r.at(ref)[i] != std::byte{0};
  return true;
}

template <class E>
uint64_t head(std::span<const E> v) noexcept {
  if constexpr (kIsCap<E>) {
    return uint64_t{sizeof(uint32_t)} * v.size();
  } else if constexpr (Fixed<E>) {
    return uint64_t{sizeof(E)} * v.size();
  } else {
    return uint64_t{sizeof(VarRef)} * v.size();
  }
}

template <class E>
uint64_t size(std::span<const E> v, uint32_t depth) noexcept {
  uint64_t n = head(v);
  if constexpr (!Fixed<E> && !kIsCap<E>) {
    if (depth == 0) return kTooDeep;
    for (const E& e : v) n = addChild(n, size(e, depth - 1));
  }
  return n;
}

template <class E>
uint64_t put(std::byte* t, uint64_t at, std::span<const E> v, CapCodec* caps) noexcept {
  if constexpr (kIsCap<E>) {
    for (size_t i = 0; i < v.size(); ++i) putCap(t + at + i * sizeof(uint32_t), v[i], caps);
    return at + v.size() * sizeof(uint32_t);
  } else if constexpr (Fixed<E>) {
    if constexpr (requires(E& e) { lrpcScrub(e); }) {
      // The caller's elements are const: each goes out through a copy with its padding zeroed.
      for (size_t i = 0; i < v.size(); ++i) {
        E e = v[i];
        lrpcScrub(e);
        std::memcpy(t + at + i * sizeof(E), &e, sizeof(E));
      }
    } else if (!v.empty()) {
      detail::bulkCopy(t + at, v.data(), v.size() * sizeof(E));
    }
    return at + v.size() * sizeof(E);
  } else {
    uint64_t end = at + head(v);
    for (size_t i = 0; i < v.size(); ++i) end = putRef(t, end, t + at + i * sizeof(VarRef), v[i], caps);
    return end;
  }
}

template <class E>
bool get(Reader& r, VarRef ref, std::vector<E>& out) {
  if constexpr (kIsCap<E>) {
    if (!r.take(ref, sizeof(uint32_t))) return false;
    const size_t n = ref.length / sizeof(uint32_t);
    out.clear();
    out.resize(n);
    for (size_t i = 0; i < n; ++i) {
      if (!getCap(r, r.at(ref) + i * sizeof(uint32_t), out[i])) return false;
    }
    return true;
  } else if constexpr (Fixed<E>) {
    if (!r.take(ref, sizeof(E))) return false;
    out.resize(ref.length / sizeof(E));
    detail::bulkCopy(out.data(), r.at(ref), ref.length);
    if constexpr (requires(E& e) { lrpcFixBools(e); }) {
      for (E& e : out) lrpcFixBools(e);
    }
    return true;
  } else {
    if (!r.enter(ref, sizeof(VarRef))) return false;
    const size_t n = ref.length / sizeof(VarRef);
    out.clear();
    out.resize(n);
    for (size_t i = 0; i < n; ++i) {
      VarRef e;
      std::memcpy(&e, r.at(ref) + i * sizeof e, sizeof e);
      if (!get(r, e, out[i])) return false;
    }
    r.leave();
    return true;
  }
}

}  // namespace codec
}  // namespace lrpc
