// The storage behind view types (idl/README.md, "Views"): a handler's views point into the
// server's private copy of the argument tail and into arrays this arena holds (a List(Text)
// view is an array of std::string_view that the frame itself does not contain). One arena per
// call, on the dispatching thread's stack: small calls need no heap allocation, and everything
// goes at once when the handler has returned.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <memory_resource>
#include <span>
#include <type_traits>
#include <vector>

namespace lrpc {

class ViewArena {
 public:
  ViewArena() noexcept : pool_(inline_, sizeof inline_) {}
  ViewArena(const ViewArena&) = delete;
  ViewArena& operator=(const ViewArena&) = delete;
  ~ViewArena() {
    for (auto it = dtors_.rbegin(); it != dtors_.rend(); ++it) it->destroy(it->first, it->count);
  }

  // `n` value-initialized elements, alive as long as the arena.
  template <class E>
  std::span<E> make(size_t n) {
    if (n == 0) return {};
    E* p = static_cast<E*>(pool_.allocate(n * sizeof(E), alignof(E)));
    std::uninitialized_value_construct_n(p, n);
    if constexpr (!std::is_trivially_destructible_v<E>) {
      dtors_.push_back({p, n, [](void* q, size_t k) { std::destroy_n(static_cast<E*>(q), k); }});
    }
    return {p, n};
  }

  // A copy of `bytes` that only this process writes, 8-aligned like the tail it copies.
  std::span<const std::byte> copy(std::span<const std::byte> bytes) {
    if (bytes.empty()) return {};
    auto* p = static_cast<std::byte*>(pool_.allocate(bytes.size(), 8));
    std::memcpy(p, bytes.data(), bytes.size());
    return {p, bytes.size()};
  }

 private:
  struct Dtor {
    void* first;
    size_t count;
    void (*destroy)(void*, size_t);
  };
  alignas(16) std::byte inline_[768];
  std::pmr::monotonic_buffer_resource pool_;  // after inline_, which it starts from
  std::vector<Dtor> dtors_;                   // arrays of views that hold capabilities
};

// A view of a struct field held through lrpc::Box (runtime/box.h): the struct's view, or none.
template <class V>
class BoxView {
 public:
  BoxView() noexcept = default;
  BoxView(const V& value) noexcept : p_(&value) {}  // NOLINT: implicit, like Box's
  bool has() const noexcept { return p_ != nullptr; }
  explicit operator bool() const noexcept { return has(); }
  // Only when has().
  const V& operator*() const noexcept { return *p_; }
  const V* operator->() const noexcept { return p_; }

 private:
  const V* p_ = nullptr;
};

}  // namespace lrpc
