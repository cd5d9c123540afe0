// lrpc::Box<T>: how a generated struct holds a struct that can contain it again (Foo holds a
// Bar that holds a Foo). A C++ value cannot contain itself, so such a field is a nullable,
// owning pointer with value semantics: copies are deep, an empty Box is what Cap'n Proto calls
// a null struct pointer, and it travels as a struct VarRef of length 0 (runtime/codec.h).
#pragma once

#include <memory>
#include <utility>

namespace lrpc {

template <class T>
class Box {
 public:
  Box() noexcept = default;
  Box(T value) : p_(std::make_unique<T>(std::move(value))) {}  // NOLINT: implicit, like optional
  Box(const Box& other) : p_(other.p_ ? std::make_unique<T>(*other.p_) : nullptr) {}
  Box(Box&&) noexcept = default;
  Box& operator=(const Box& other) {
    if (this != &other) p_ = other.p_ ? std::make_unique<T>(*other.p_) : nullptr;
    return *this;
  }
  Box& operator=(Box&&) noexcept = default;
  ~Box() = default;

  bool has() const noexcept { return p_ != nullptr; }
  explicit operator bool() const noexcept { return has(); }
  // A fresh value in place of whatever it held.
  T& emplace() {
    p_ = std::make_unique<T>();
    return *p_;
  }
  void reset() noexcept { p_.reset(); }
  // Only when has(): an empty Box has no value to look at.
  T& operator*() noexcept { return *p_; }
  const T& operator*() const noexcept { return *p_; }
  T* operator->() noexcept { return p_.get(); }
  const T* operator->() const noexcept { return p_.get(); }

  // Equal when both are empty, or both hold equal values.
  friend bool operator==(const Box& a, const Box& b) {
    if (!a.p_ || !b.p_) return !a.p_ && !b.p_;
    return *a.p_ == *b.p_;
  }

 private:
  std::unique_ptr<T> p_;
};

}  // namespace lrpc
