// View types in a frame's tail (idl/README.md, "Views"): the same encoding as runtime/codec.h,
// read without building owning containers. A generated struct S has S::View, whose members are
// std::string_view for Text, std::span<const uint8_t> for Data, std::span<const E> for a List
// (E the element's view), E::View for a struct that travels by reference and BoxView for one
// held through a Box. Writing a view needs nothing new: codec.h's templates take string_view
// and spans (and BoxView, beside Box), and the generator writes lrpcHead/lrpcSize/lrpcPut for
// S::View as for S. Reading one (below) points into the tail, which must be memory no peer
// writes (the server's private copy), and keeps the arrays the frame does not hold in the
// Reader's ViewArena.
//
// viewOf(owning value, arena) and ownedOf(view) convert between the two forms, with the
// generated lrpcViewOf(const S&, ViewArena&) and lrpcOwnedOf(const S::View&) for structs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "runtime/base/bulk_copy.h"
#include "runtime/codec.h"

namespace lrpc {

// The storage behind view types (idl/README.md, "Views"): a handler's views point into the
// server's private copy of the argument tail and into arrays this arena holds (a List(Text)
// view is an array of std::string_view that the frame itself does not contain). One arena per
// call, on the dispatching thread's stack: small calls need no heap allocation, and everything
// goes at once when the handler has returned.
class ViewArena {
 public:
  ViewArena() noexcept = default;
  ViewArena(const ViewArena&) = delete;
  ViewArena& operator=(const ViewArena&) = delete;
  ~ViewArena() {
    for (auto it = dtors_.rbegin(); it != dtors_.rend(); ++it) it->destroy(it->first, it->count);
  }

  // `n` value-initialized elements, alive as long as the arena.
  template <class E>
  std::span<E> make(size_t n) {
    if (n == 0) return {};
    E* p = static_cast<E*>(allocate(n * sizeof(E), alignof(E)));
    std::uninitialized_value_construct_n(p, n);
    if constexpr (!std::is_trivially_destructible_v<E>) {
      dtors_.push_back({p, n, [](void* q, size_t k) { std::destroy_n(static_cast<E*>(q), k); }});
    }
    return {p, n};
  }

  // A copy of `bytes` that only this process writes, 8-aligned like the tail it copies.
  std::span<const std::byte> copy(std::span<const std::byte> bytes) {
    if (bytes.empty()) return {};
    auto* p = static_cast<std::byte*>(allocate(bytes.size(), 8));
    detail::bulkCopy(p, bytes.data(), bytes.size());
    return {p, bytes.size()};
  }

 private:
  // A bump allocation: from the inline room first, then from chunks that double in size. Its
  // own rather than std::pmr's, whose header brings <shared_mutex> into every generated file.
  void* allocate(size_t bytes, size_t align) {
    for (;;) {
      const auto at = reinterpret_cast<uintptr_t>(base_ + used_);
      const size_t pad = (align - at % align) % align;
      if (pad <= room_ - used_ && bytes <= room_ - used_ - pad) {
        used_ += pad + bytes;
        return base_ + used_ - bytes;
      }
      const size_t want = bytes + align;
      const size_t size = want > next_ ? want : next_;
      chunks_.emplace_back(new std::byte[size]);  // throws bad_alloc as any container would
      base_ = chunks_.back().get();
      room_ = size;
      used_ = 0;
      next_ = size * 2;
    }
  }

  struct Dtor {
    void* first;
    size_t count;
    void (*destroy)(void*, size_t);
  };
  alignas(16) std::byte inline_[768];
  std::byte* base_ = inline_;
  size_t room_ = sizeof inline_;
  size_t used_ = 0;
  size_t next_ = 4096;
  std::vector<std::unique_ptr<std::byte[]>> chunks_;
  std::vector<Dtor> dtors_;  // arrays of views that hold capabilities
};


namespace codec {

// ---- Reading views (declarations first: lists of lists call each other).

inline bool get(Reader& r, VarRef ref, std::string_view& out) noexcept;
template <class E> bool get(Reader& r, VarRef ref, std::span<const E>& out);
template <Coded V> bool get(Reader& r, VarRef ref, BoxView<V>& out);

inline bool get(Reader& r, VarRef ref, std::string_view& out) noexcept {
  if (!r.take(ref, 1)) return false;
  out = ref.length == 0 ? std::string_view() : std::string_view(reinterpret_cast<const char*>(r.at(ref)), ref.length);
  return true;
}

template <class E>
bool get(Reader& r, VarRef ref, std::span<const E>& out) {
  if (r.arena == nullptr) return false;  // a reader of owning values cannot keep views
  if constexpr (kIsCap<E>) {
    if (!r.take(ref, sizeof(uint32_t))) return false;
    std::span<E> caps = r.arena->make<E>(ref.length / sizeof(uint32_t));
    for (size_t i = 0; i < caps.size(); ++i) {
      if (!getCap(r, r.at(ref) + i * sizeof(uint32_t), caps[i])) return false;
    }
    out = caps;
    return true;
  } else if constexpr (std::is_same_v<E, bool>) {
    // Any byte but 0 is true: copied, as a bool holding another value is undefined behaviour.
    if (!r.take(ref, 1)) return false;
    std::span<bool> bools = r.arena->make<bool>(ref.length);
    for (size_t i = 0; i < bools.size(); ++i) bools[i] = r.at(ref)[i] != std::byte{0};
    out = bools;
    return true;
  } else if constexpr (Fixed<E>) {
    if (!r.take(ref, sizeof(E))) return false;
    const size_t n = ref.length / sizeof(E);
    const bool aligned = reinterpret_cast<uintptr_t>(r.at(ref)) % alignof(E) == 0;
    constexpr bool kHasBools = requires(E& e) { lrpcFixBools(e); };
    if (n != 0 && (kHasBools || !aligned)) {
      // A struct with Bools is fixed up in a copy; a writer that misaligned a list (never an
      // honest one) has it copied to an aligned place instead of refused.
      std::span<E> copy = r.arena->make<E>(n);
      detail::bulkCopy(copy.data(), r.at(ref), ref.length);
      if constexpr (kHasBools) {
        for (E& e : copy) lrpcFixBools(e);
      }
      out = copy;
    } else {
      out = n == 0 ? std::span<const E>() : std::span<const E>(reinterpret_cast<const E*>(r.at(ref)), n);
    }
    return true;
  } else {
    if (!r.enter(ref, sizeof(VarRef))) return false;
    std::span<E> elems = r.arena->make<E>(ref.length / sizeof(VarRef));
    for (size_t i = 0; i < elems.size(); ++i) {
      VarRef e;
      std::memcpy(&e, r.at(ref) + i * sizeof e, sizeof e);
      if (!get(r, e, elems[i])) return false;
    }
    r.leave();
    out = elems;
    return true;
  }
}

template <Coded V>
bool get(Reader& r, VarRef ref, BoxView<V>& out) {
  if (ref.length == 0) {
    if (!r.take(ref, 1)) return false;
    out = BoxView<V>();
    return true;
  }
  if (r.arena == nullptr) return false;
  V& v = r.arena->make<V>(1)[0];
  if (!get(r, ref, v)) return false;
  out = BoxView<V>(v);
  return true;
}

// ---- Owning value -> view. The view points into `v` and `arena`: keep both.

inline std::string_view viewOf(const std::string& v, ViewArena&) noexcept { return v; }
template <Fixed T> T viewOf(const T& v, ViewArena&) noexcept { return v; }
template <class I> Cap<I> viewOf(const Cap<I>& v, ViewArena&) { return v; }
template <class S>
  requires requires(const S& s, ViewArena& a) { lrpcViewOf(s, a); }
typename S::View viewOf(const S& v, ViewArena& arena) {
  return lrpcViewOf(v, arena);
}
template <class S>
BoxView<typename S::View> viewOf(const Box<S>& v, ViewArena& arena) {
  if (!v) return {};
  typename S::View& inner = arena.make<typename S::View>(1)[0];
  inner = viewOf(*v, arena);
  return BoxView<typename S::View>(inner);
}
inline std::span<const bool> viewOf(const std::vector<bool>& v, ViewArena& arena) {
  std::span<bool> out = arena.make<bool>(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = v[i];
  return out;
}
template <class E>
auto viewOf(const std::vector<E>& v, ViewArena& arena) {
  using V = decltype(viewOf(std::declval<const E&>(), arena));
  if constexpr (std::is_same_v<V, E>) {
    return std::span<const E>(v);  // numbers, enums, fixed-size structs: the vector's own array
  } else {
    std::span<V> out = arena.make<V>(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = viewOf(v[i], arena);
    return std::span<const V>(out);
  }
}

// ---- View -> owning value (a deep copy).

inline std::string ownedOf(std::string_view v) { return std::string(v); }
template <Fixed T> T ownedOf(const T& v) noexcept { return v; }
template <class I> Cap<I> ownedOf(const Cap<I>& v) { return v; }
template <class V>
  requires requires(const V& v) { lrpcOwnedOf(v); }
typename V::Owned ownedOf(const V& v) {
  return lrpcOwnedOf(v);
}
template <class V>
Box<typename V::Owned> ownedOf(const BoxView<V>& v) {
  if (!v) return {};
  return Box<typename V::Owned>(ownedOf(*v));
}
template <class E>
auto ownedOf(std::span<const E> v) {
  using O = decltype(ownedOf(std::declval<const E&>()));
  std::vector<O> out;
  out.reserve(v.size());
  for (const E& e : v) out.push_back(ownedOf(e));
  return out;
}

// A view of a constant owning value that it keeps alive: a View member's Data or List default.
template <class T>
class Frozen {
 public:
  explicit Frozen(T value) : value_(std::move(value)), view_(viewOf(value_, arena_)) {}
  auto view() const noexcept { return view_; }

 private:
  T value_;
  ViewArena arena_;
  decltype(viewOf(std::declval<const T&>(), std::declval<ViewArena&>())) view_;
};

}  // namespace codec

// For users: a view of an owning value (to pass where a method takes views), and an owning
// copy of a view (to keep what a handler received after it returns).
using codec::ownedOf;
using codec::viewOf;

}  // namespace lrpc
