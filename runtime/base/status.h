// Errors as values: every boundary of lrpc (the A-stack, the wire, the control path)
// reports failure as a Status or a Result<T>, never as an exception.
//
// A Status is one word. Ok is zero, so returning, testing and destroying an ok Status costs
// what an integer does; an error without detail is the code in that word, also without
// allocation; only an error with a detail string points at a heap record. Constructing any
// Status never throws: if the record cannot be allocated, the code survives without detail.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace lrpc {

// The error codes a caller can see. The numeric values travel in A-stack headers and
// on the wire, so they are fixed: append, never renumber, and keep kLastErrc the last.
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
  kCancelled = 14,         // the caller cancelled the call, or the binding or runtime is shutting down
  kLastErrc = kCancelled,
};

// A short, stable name for each code ("peer died", ...).
std::string_view errcName(Errc code) noexcept;

// The longest error detail that crosses a process boundary, on either path: the sending side
// cuts a longer one to this (an A-stack frame always has this much room for it, so the same
// call fails with the same text on the same host as over the network).
inline constexpr size_t kMaxWireDetail = 160;

// A code read from memory or a packet a peer wrote: any byte outside the known codes is
// kBadFrame, so a hostile peer can never produce an Errc value the enum does not name.
constexpr Errc errcFromWire(uint8_t byte) noexcept {
  return byte <= static_cast<uint8_t>(Errc::kLastErrc) ? static_cast<Errc>(byte) : Errc::kBadFrame;
}

// Ok, or an error code plus optional human-readable detail.
class [[nodiscard]] Status {
 public:
  Status() noexcept = default;
  constexpr Status(Errc code) noexcept : bits_(bare(code)) {}  // NOLINT: implicit on purpose
  Status(Errc code, std::string&& detail) noexcept;
  Status(Errc code, std::string_view detail) noexcept;
  Status(Errc code, const char* detail) noexcept : Status(code, std::string_view(detail)) {}
  // The detail joined from `pieces`, without throwing: for a detail that names run-time values
  // ({"no answer from ", address.text(), " after ", detail::Decimal(n), " tries"}), where a
  // std::string built at the call site could throw inside a noexcept function.
  Status(Errc code, std::initializer_list<std::string_view> pieces) noexcept;
  Status(const Status& o) noexcept : bits_(o.isHeap() ? o.copyRecord() : o.bits_) {}
  Status(Status&& o) noexcept : bits_(std::exchange(o.bits_, 0)) {}
  Status& operator=(const Status& o) noexcept {
    if (this != &o) reset(o.isHeap() ? o.copyRecord() : o.bits_);
    return *this;
  }
  Status& operator=(Status&& o) noexcept {
    if (this != &o) reset(std::exchange(o.bits_, 0));
    return *this;
  }
  constexpr ~Status() {
    if (isHeap()) [[unlikely]] freeRecord();
  }

  static Status ok() noexcept { return {}; }
  // Maps a (positive) errno into kIoError with "what: strerror" as detail.
  static Status fromErrno(int err, std::string_view what) noexcept;

  bool isOk() const noexcept { return bits_ == 0; }
  explicit operator bool() const noexcept { return isOk(); }
  Errc code() const noexcept { return isHeap() ? recordCode() : static_cast<Errc>(bits_ >> 1); }
  // Empty when there is none (and always for an ok Status).
  const std::string& detail() const noexcept;
  // "peer died: server process exited" (or "ok").
  std::string toString() const;

  friend bool operator==(const Status& a, Errc b) noexcept { return a.code() == b; }

 private:
  struct Record;
  // bits_: 0 = ok; odd = (code << 1) | 1, no detail; even and non-zero = a Record*.
  static constexpr uintptr_t bare(Errc code) noexcept {
    return code == Errc::kOk ? 0 : (uintptr_t{static_cast<uint8_t>(code)} << 1) | 1;
  }
  constexpr bool isHeap() const noexcept { return bits_ != 0 && (bits_ & 1) == 0; }
  void reset(uintptr_t bits) noexcept {
    if (isHeap()) freeRecord();
    bits_ = bits;
  }
  static uintptr_t makeRecord(Errc code, std::string&& detail) noexcept;
  Errc recordCode() const noexcept;
  uintptr_t copyRecord() const noexcept;
  void freeRecord() noexcept;

  uintptr_t bits_ = 0;
};
static_assert(sizeof(Status) == sizeof(void*));

namespace detail {
// The detail a peer sent (`n` bytes at `p`), as a receiver reads it: at most kMaxWireDetail.
inline std::string_view wireDetail(const void* p, size_t n) noexcept {
  return {static_cast<const char*>(p), n < kMaxWireDetail ? n : kMaxWireDetail};
}

// A number as text, made without allocating, for a Status's pieces. The text lives in the
// object: a view of a temporary Decimal is good only until the end of its full expression.
class Decimal {
 public:
  explicit Decimal(uint64_t value) noexcept {
    do {
      buf_[--start_] = static_cast<char>('0' + value % 10);
      value /= 10;
    } while (value != 0);
  }
  operator std::string_view() const noexcept { return {buf_ + start_, sizeof buf_ - start_}; }  // NOLINT: implicit

 private:
  char buf_[20];  // UINT64_MAX has 20 digits
  uint8_t start_ = sizeof buf_;
};

[[noreturn]] void checkFailed(const char* file, int line, const char* cond, const char* msg) noexcept;
[[noreturn]] void valueOfError(const Status& status) noexcept;

// What Result::status() refers to when the Result holds a value (ok), or holds nothing
// because a throwing move of its value left the variant empty.
inline constexpr Status kOkStatus{};
inline constexpr Status kValuelessStatus{Errc::kServerFault};
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

namespace lrpc {

// A value or the error Status that explains why there is none (std::expected is C++23).
// The variant holds exactly one of them, so a Result is its value plus the variant's index, and
// construction, copy and assignment are the variant's own.
template <class T>
class [[nodiscard]] Result {
  static_assert(!std::is_same_v<T, Status>, "use Status for no value");
  static_assert(!std::is_reference_v<T>, "a Result holds a value");

 public:
  Result(T value) noexcept(std::is_nothrow_move_constructible_v<T>)  // NOLINT: implicit on purpose
      : v_(std::in_place_index<kValue>, std::move(value)) {}
  // An ok Status carries no value: building a Result from one is a bug in the caller.
  Result(Status status) noexcept  // NOLINT: implicit on purpose
      : v_(std::in_place_index<kError>, errorOf(std::move(status))) {}
  Result(Errc code) noexcept : Result(Status(code)) {}
  template <class D>
  Result(Errc code, D&& detail) noexcept : Result(Status(code, std::forward<D>(detail))) {}

  bool isOk() const noexcept { return v_.index() == kValue; }
  explicit operator bool() const noexcept { return isOk(); }
  const Status& status() const noexcept {
    if (const Status* s = std::get_if<kError>(&v_)) return *s;
    return isOk() ? detail::kOkStatus : detail::kValuelessStatus;
  }

  // Accessing the value of an error Result is a bug in the caller: it aborts with context.
  T& value() & { return *get(); }
  const T& value() const& { return *get(); }
  T&& value() && { return std::move(*get()); }
  T* operator->() { return get(); }
  const T* operator->() const { return get(); }
  T& operator*() & { return *get(); }
  const T& operator*() const& { return *get(); }
  T&& operator*() && { return std::move(*get()); }

 private:
  static constexpr size_t kError = 0;
  static constexpr size_t kValue = 1;
  static Status errorOf(Status status) noexcept {
    LRPC_DCHECK(!status.isOk(), "Result built from an ok Status");
    if (status.isOk()) [[unlikely]] return Status(Errc::kServerFault, "Result built from an ok Status");
    return status;
  }
  T* get() noexcept {
    if (!isOk()) [[unlikely]] detail::valueOfError(status());
    return std::get_if<kValue>(&v_);
  }
  const T* get() const noexcept {
    if (!isOk()) [[unlikely]] detail::valueOfError(status());
    return std::get_if<kValue>(&v_);
  }

  std::variant<Status, T> v_;
};

}  // namespace lrpc
