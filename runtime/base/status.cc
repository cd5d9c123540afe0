#include "runtime/base/status.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace lrpc {

struct Status::Record {
  Errc code;
  std::string detail;
};

// Takes over `detail` into a fresh record; without memory (or with an empty detail) the
// error is the bare code, so that an error is never lost to the allocation that describes it.
uintptr_t Status::makeRecord(Errc code, std::string&& detail) noexcept {
  if (code == Errc::kOk) return 0;
  if (detail.empty()) return bare(code);
  auto* r = new (std::nothrow) Record{code, {}};
  if (r == nullptr) return bare(code);
  r->detail = std::move(detail);  // a move: no allocation, cannot throw
  return reinterpret_cast<uintptr_t>(r);
}

Status::Status(Errc code, std::string&& detail) noexcept
    : bits_(makeRecord(code, std::move(detail))) {}

Status::Status(Errc code, std::string_view detail) noexcept : bits_(bare(code)) {
  if (code == Errc::kOk || detail.empty()) return;
  try {
    bits_ = makeRecord(code, std::string(detail));
  } catch (...) {
    // No memory for the detail: keep the bare code.
  }
}

Status::Status(Errc code, std::initializer_list<std::string_view> pieces) noexcept : bits_(bare(code)) {
  if (code == Errc::kOk) return;
  try {
    size_t n = 0;
    for (std::string_view p : pieces) n += p.size();
    std::string detail;
    detail.reserve(n);
    for (std::string_view p : pieces) detail += p;
    bits_ = makeRecord(code, std::move(detail));
  } catch (...) {
    // No memory for the detail: keep the bare code.
  }
}

Errc Status::recordCode() const noexcept { return reinterpret_cast<const Record*>(bits_)->code; }

uintptr_t Status::copyRecord() const noexcept {
  const auto* r = reinterpret_cast<const Record*>(bits_);
  try {
    return makeRecord(r->code, std::string(r->detail));
  } catch (...) {
    return bare(r->code);
  }
}

void Status::freeRecord() noexcept { delete reinterpret_cast<Record*>(bits_); }

const std::string& Status::detail() const noexcept {
  static const std::string kNone;  // immutable: what ok and bare errors answer
  return isHeap() ? reinterpret_cast<const Record*>(bits_)->detail : kNone;
}

std::string_view errcName(Errc code) noexcept {
  switch (code) {
    case Errc::kOk: return "ok";
    case Errc::kPeerDied: return "peer died";
    case Errc::kDeadlineExceeded: return "deadline exceeded";
    case Errc::kServerFault: return "server fault";
    case Errc::kBindingRejected: return "binding rejected";
    case Errc::kResourceExhausted: return "resource exhausted";
    case Errc::kInvalidArgument: return "invalid argument";
    case Errc::kBadFrame: return "bad frame";
    case Errc::kUnsupported: return "unsupported";
    case Errc::kNotFound: return "not found";
    case Errc::kAlreadyExists: return "already exists";
    case Errc::kPermissionDenied: return "permission denied";
    case Errc::kIoError: return "i/o error";
    case Errc::kApplication: return "application error";
    case Errc::kCancelled: return "cancelled";
  }
  return "unknown error";
}

Status Status::fromErrno(int err, std::string_view what) noexcept {
  char text[256];
  int n = std::snprintf(text, sizeof text, "%.*s: %s", static_cast<int>(what.size()), what.data(), std::strerror(err));
  if (n < 0) return Status(Errc::kIoError);
  return Status(Errc::kIoError, std::string_view(text, static_cast<size_t>(n) < sizeof text ? n : sizeof text - 1));
}

std::string Status::toString() const {
  std::string s(errcName(code()));
  if (!detail().empty()) {
    s += ": ";
    s += detail();
  }
  return s;
}

namespace detail {
void checkFailed(const char* file, int line, const char* cond, const char* msg) noexcept {
  std::fprintf(stderr, "lrpc: check failed at %s:%d: %s (%s)\n", file, line, cond, msg);
  std::abort();
}

void valueOfError(const Status& status) noexcept {
  std::string_view name = errcName(status.code());
  std::fprintf(stderr, "lrpc: value() of an error Result: %.*s: %s\n", static_cast<int>(name.size()), name.data(),
               status.detail().c_str());
  std::abort();
}
}  // namespace detail

}  // namespace lrpc
