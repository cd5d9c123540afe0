#include "runtime/status.h"

#include <cstring>

namespace lrpc {

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

Status Status::fromErrno(int err, std::string_view what) {
  std::string d(what);
  d += ": ";
  d += std::strerror(err);
  return Status(Errc::kIoError, std::move(d));
}

std::string Status::toString() const {
  std::string s(errcName(code_));
  if (!detail_.empty()) {
    s += ": ";
    s += detail_;
  }
  return s;
}

namespace detail {
void checkFailed(const char* file, int line, const char* cond, const char* msg) {
  std::fprintf(stderr, "lrpc: check failed at %s:%d: %s (%s)\n", file, line, cond, msg);
  std::abort();
}
}  // namespace detail

}  // namespace lrpc
