#include "runtime/send_batch.h"

#include <utility>

namespace lrpc {

namespace {
thread_local SendBatch* tCurrent = nullptr;
}  // namespace

SendBatch::SendBatch() noexcept : outer_(tCurrent) { tCurrent = this; }

void SendBatch::restore() noexcept { tCurrent = outer_; }

SendBatch* SendBatch::current() noexcept { return tCurrent; }

bool SendBatch::hold(std::weak_ptr<detail::HeldSends> channel) noexcept {
  for (const auto& c : channels_) {
    if (!c.owner_before(channel) && !channel.owner_before(c)) return true;  // known already
  }
  try {
    channels_.push_back(std::move(channel));
  } catch (...) {
    return false;
  }
  return true;
}

void SendBatch::flush() noexcept {
  // Taken out first: a channel's send may start no new call, but its destructor may run here.
  std::vector<std::weak_ptr<detail::HeldSends>> channels;
  channels.swap(channels_);
  for (auto& weak : channels) {
    if (std::shared_ptr<detail::HeldSends> c = weak.lock()) c->sendHeld();
  }
}

}  // namespace lrpc
