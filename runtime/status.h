// Errors as values: every boundary of lrpc (the A-stack, the wire, the control path)
// reports failure as a Status or a Result<T>, never as an exception.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace lrpc {

// The error codes a caller can see. The numeric values travel in A-stack headers and
// on the wire, so they are fixed: append, never renumber.
enum class Errc : uint8_t {
  kOk = 0,
  kPeerDied = 1,           // the other process (or host) went away
  kDeadlineExceeded = 2,   // the per-call deadline passed before the reply
  kServerFault = 3,        // the handler threw; detail carries its message
  kBindingRejected = 4,    // credentials, interface mismatch, forged key
  kResourceExhausted = 5,  // A-stacks, threads, memory, window
  kInvalidArgument = 6,    // caller passed something out of range
  kBadFrame = 7,           // a frame or packet failed validation
  kUnsupported = 8,        // kernel feature missing (io_uring op, ...)
  kNotFound = 9,           // no such exported name
  kAlreadyExists = 10,     // name already exported by a live server
  kPermissionDenied = 11,  // peer uid not allowed
  kIoError = 12,           // a system call failed; detail has errno text
  kApplication = 13,       // a handler returned an error of its own
  kCancelled = 14,         // the binding or runtime is shutting down
};

// A short, stable name for each code ("peer died", ...).
std::string_view errcName(Errc code) noexcept;

// Ok, or an error code plus optional human-readable detail. Cheap when ok: no allocation.
class [[nodiscard]] Status {
 public:
  Status() noexcept = default;
  Status(Errc code, std::string detail = {}) : code_(code), detail_(std::move(detail)) {}

  static Status ok() noexcept { return {}; }
  // Maps a (positive) errno into kIoError with "what: strerror" as detail.
  static Status fromErrno(int err, std::string_view what);

  bool isOk() const noexcept { return code_ == Errc::kOk; }
  explicit operator bool() const noexcept { return isOk(); }
  Errc code() const noexcept { return code_; }
  const std::string& detail() const noexcept { return detail_; }
  // "peer died: server process exited" (or "ok").
  std::string toString() const;

  friend bool operator==(const Status& a, Errc b) noexcept { return a.code_ == b; }

 private:
  Errc code_ = Errc::kOk;
  std::string detail_;
};

// A value or the Status that explains why there is none (std::expected is C++23).
template <class T>
class [[nodiscard]] Result {
  static_assert(!std::is_same_v<T, Status>, "use Status for no value");

 public:
  Result(T value) : ok_(true) { new (&value_) T(std::move(value)); }  // NOLINT: implicit on purpose
  Result(Status status) : ok_(false), status_(std::move(status)) {   // NOLINT
    if (status_.isOk()) status_ = Status(Errc::kInvalidArgument, "Result built from an ok Status");
  }
  Result(Errc code, std::string detail = {}) : Result(Status(code, std::move(detail))) {}
  Result(const Result& o) : ok_(o.ok_), status_(o.status_) {
    if (ok_) new (&value_) T(o.value_);
  }
  Result(Result&& o) noexcept(std::is_nothrow_move_constructible_v<T>)
      : ok_(o.ok_), status_(std::move(o.status_)) {
    if (ok_) new (&value_) T(std::move(o.value_));
  }
  Result& operator=(Result o) noexcept(std::is_nothrow_move_constructible_v<T>) {
    this->~Result();
    new (this) Result(std::move(o));
    return *this;
  }
  ~Result() {
    if (ok_) value_.~T();
  }

  bool isOk() const noexcept { return ok_; }
  explicit operator bool() const noexcept { return ok_; }
  const Status& status() const noexcept { return status_; }

  // Accessing the value of an error Result is a bug in the caller: it aborts with context.
  T& value() & { check(); return value_; }
  const T& value() const& { check(); return value_; }
  T&& value() && { check(); return std::move(value_); }
  T* operator->() { check(); return &value_; }
  const T* operator->() const { check(); return &value_; }
  T& operator*() & { check(); return value_; }
  const T& operator*() const& { check(); return value_; }

 private:
  void check() const {
    if (!ok_) {
      std::fprintf(stderr, "lrpc: value() of an error Result: %s\n", status_.toString().c_str());
      std::abort();
    }
  }

  bool ok_;
  Status status_;
  union {
    T value_;
  };
};

namespace detail {
[[noreturn]] void checkFailed(const char* file, int line, const char* cond, const char* msg);
}  // namespace detail

}  // namespace lrpc

// Always-on invariant check for bugs (never for peer input: that returns a Status).
#define LRPC_CHECK(cond, msg) \
  ((cond) ? (void)0 : ::lrpc::detail::checkFailed(__FILE__, __LINE__, #cond, (msg)))
#ifdef NDEBUG
#define LRPC_DCHECK(cond, msg) ((void)0)
#else
#define LRPC_DCHECK(cond, msg) LRPC_CHECK(cond, msg)
#endif
