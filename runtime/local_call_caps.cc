// A same-host call on a received capability, made in place on its connection's tunnel A-stack
// (runtime/capability.h): LocalCall's members for it. The stub writes the inner frame in the
// tunnel's argument tail, and reads the inner reply where the server wrote it.
#include "runtime/local_call.h"

#include "runtime/capability.h"
#include "runtime/local_binding.h"

#include <cstring>

namespace lrpc {

Status LocalCall::aimAtCapability(uint32_t procedure) noexcept {
  if (procedure >= binding_.iface->procedureCount) return Status(Errc::kInvalidArgument, "procedure out of range");
  if (!lb_->iface().carriesCaps || lb_->procedureCount() == 0) {
    return Status(Errc::kBadFrame, "capability received through a binding that carries none");
  }
  inner_ = &binding_.iface->procedures[procedure];
  procedure_ = lb_->procedureCount() - 1;
  return {};
}

Result<std::span<std::byte>> LocalCall::capabilityArgTail(size_t n) noexcept {
  const size_t fixed = inner_->argsSize;
  if (n > UINT32_MAX - fixed) return Status(Errc::kInvalidArgument, "argument frame too large");
  const size_t total = fixed + n;
  if (total <= proc_->layout.tailRoom) {
    argTail_ = static_cast<uint32_t>(total);
    return std::span<std::byte>(innerFrame_ + fixed, n);
  }
  Result<std::span<std::byte>> r = lb_->argOutOfBand(index_, total);
  if (!r.isOk()) return r.status();
  argTail_ = static_cast<uint32_t>(total);
  argFlags_ = kTailOutOfBand;
  innerFrame_ = r->data();
  return r->subspan(fixed);
}

Status LocalCall::sealCapabilityArgs() noexcept {
  const size_t fixed = inner_->argsSize;
  if (argTail_ < fixed) {  // no tail: the frame is the fixed part alone
    if (Result<std::span<std::byte>> r = capabilityArgTail(0); !r.isOk()) return r.status();
  }
  // An out-of-band frame: the stub wrote the fixed part inline, where args() pointed.
  if (args_ != innerFrame_ && fixed != 0) std::memcpy(innerFrame_, args_, fixed);
  const detail::CapCallArgs head{{0, argTail_}, binding_.capId, inner_->index, binding_.iface->id};
  std::memcpy(frame_, &head, sizeof head);
  return {};
}

Status LocalCall::openCapabilityResults() noexcept {
  detail::CapCallResults r;
  std::memcpy(&r, results_, sizeof r);  // once: the server may still rewrite it
  if (!detail::varRefOk(r.frame, resultTail_.size(), 1)) {
    return Status(Errc::kBadFrame, "capability call: reply frame outside the tail");
  }
  if (r.frame.length < inner_->resultsSize) return Status(Errc::kBadFrame, "reply shorter than its fixed part");
  results_ = resultTail_.data() + r.frame.offset;
  resultTail_ = resultTail_.subspan(size_t{r.frame.offset} + inner_->resultsSize, r.frame.length - inner_->resultsSize);
  return {};
}

}  // namespace lrpc
