#include "runtime/stub_support.h"

#include <cstdint>
#include <exception>
#include <string>

#include "runtime/base/bulk_copy.h"

namespace lrpc::detail {

namespace {
// Answers every call of a client that has no usable binding.
class RejectingChannel final : public CallChannel {
 public:
  explicit RejectingChannel(std::string why) : why_(std::move(why)) {}
  Status call(const InterfaceDescriptor&, uint32_t, const OutMessage&, MessageBuffer&,
              const CallOptions&) noexcept override {
    return Status(Errc::kBindingRejected, std::string_view(why_));
  }
  // An unbound Client, written into a frame, is the null capability.
  bool isNullCap() const noexcept override { return true; }

 private:
  std::string why_;
};
}  // namespace

std::shared_ptr<Binding> checkedBinding(std::shared_ptr<Binding> binding, const InterfaceDescriptor& iface) {
  if (binding && (binding->iface == &iface || isA(*binding->iface, iface.id))) return binding;
  std::string why = binding ? std::string("binding is for ") + binding->iface->name + ", not " + iface.name
                            : std::string("client of ") + iface.name + " is not bound";
  auto channel = std::make_shared<RejectingChannel>(std::move(why));
  CallChannel* raw = channel.get();
  return std::make_shared<Binding>(iface, raw, std::move(channel));
}

Status noProcedure(const char* iface, uint32_t procedure) noexcept {
  return Status(Errc::kBadFrame, {iface, ": no procedure ", Decimal(procedure)});
}

Status handlerThrew(const char* method) noexcept {
  // Building the detail can itself run out of memory: then the caller still learns that the
  // handler failed, without the text.
  try {
    std::string detail = std::string(method) + " threw";
    try {
      throw;
    } catch (const std::exception& e) {
      detail += ": ";
      detail += e.what();
    } catch (...) {
      detail += " a non-std::exception";
    }
    return Status(Errc::kServerFault, std::move(detail));
  } catch (...) {
    return Status(Errc::kServerFault);
  }
}

}  // namespace lrpc::detail

namespace lrpc {

namespace {
// A call that completed before it was handed back (CallChannel::startAsync's default).
class CompletedCall final : public ChannelCall {
 public:
  explicit CompletedCall(Status status) noexcept : status_(std::move(status)) {}
  std::optional<Status> await(int64_t) noexcept override {
    if (taken_) return Status(Errc::kInvalidArgument, "call already completed");
    taken_ = true;
    return std::move(status_);
  }
  void cancel() noexcept override {}

 private:
  Status status_;
  bool taken_ = false;
};
}  // namespace

bool callCancelled() noexcept {
  const ServerCall* call = detail::tlsCurrentCall;
  return call != nullptr && call->cancelled();
}

std::vector<uint8_t> resultBuffer() noexcept {
  ServerCall* call = detail::tlsCurrentCall;
  std::vector<uint8_t> out = call != nullptr ? call->takeResultStorage() : std::vector<uint8_t>();
  out.clear();
  return out;
}

std::vector<uint8_t> takeArgument(std::span<const uint8_t> bytes) {
  if (ServerCall* call = detail::tlsCurrentCall; call != nullptr) {
    if (std::vector<uint8_t>* copy = call->takeArgCopy(bytes); copy != nullptr) return std::move(*copy);
  }
  std::vector<uint8_t> out = resultBuffer();
  detail::assignBulk(out, bytes.data(), bytes.size());
  return out;
}

Status awaitArgument(std::span<const uint8_t> data, size_t n) noexcept {
  if (n > data.size()) return Status(Errc::kInvalidArgument, "awaitArgument: more bytes than the argument has");
  ServerCall* call = detail::tlsCurrentCall;
  if (call == nullptr || n == 0) return {};
  // Compared as addresses: a span elsewhere than the call's tail is not an error, only final.
  const std::span<const std::byte> tail = call->argTail();
  const auto at = reinterpret_cast<uintptr_t>(data.data());
  const auto begin = reinterpret_cast<uintptr_t>(tail.data());
  if (at < begin || at - begin > tail.size() || data.size() > tail.size() - (at - begin)) return {};
  return call->awaitArgTail(at - begin + n);
}

Result<std::unique_ptr<ChannelCall>> CallChannel::startAsync(const InterfaceDescriptor& iface, uint32_t procedure,
                                                             const OutMessage& request, MessageBuffer& reply,
                                                             const CallOptions& options, detail::Reclaim) noexcept {
  std::unique_ptr<ChannelCall> done(new (std::nothrow) CompletedCall(call(iface, procedure, request, reply, options)));
  if (!done) return Status(Errc::kResourceExhausted, "out of memory for an asynchronous call");
  return done;
}

}  // namespace lrpc

namespace lrpc {

Result<std::unique_ptr<DeferredCall>> ServerCall::defer() noexcept {
  return Status(Errc::kUnsupported, "this path cannot defer a reply ($Lrpc.deferred)");
}

namespace detail {

void ReplyBase::dropped() noexcept {
  if (!call_) return;
  // Without memory for the text the caller still learns, from the code, that nobody will answer.
  Status s(Errc::kServerFault, {method_, ": the handler dropped its reply without answering"});
  std::unique_ptr<DeferredCall> call = std::move(call_);
  call->finish(std::move(s), nullptr, nullptr);
}

}  // namespace detail
}  // namespace lrpc
