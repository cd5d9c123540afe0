// PLACEHOLDER owned by the runtime work (issue 3): the same-host "Call" (see RemoteCall in
// stub_support.h for the concept). The runtime replaces this file with the A-stack path.
#pragma once

#include "runtime/stub_support.h"

namespace lrpc {

class LocalCall {
 public:
  LocalCall(const Binding&, uint32_t, const CallOptions&) noexcept
      : status_(Errc::kUnsupported, "same-host calls are not built yet") {}
  const Status& status() const noexcept { return status_; }
  std::byte* args() noexcept { return nullptr; }
  Result<std::span<std::byte>> argTail(size_t) noexcept { return status_; }
  Status invoke() noexcept { return status_; }
  const std::byte* results() const noexcept { return nullptr; }
  std::span<const std::byte> resultTail() const noexcept { return {}; }

 private:
  Status status_;
};

}  // namespace lrpc
