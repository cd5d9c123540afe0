#include "transport/fragment_batch.h"

namespace lrpc::net {

Status FragmentBatch::send(Endpoint& endpoint, NetAddress to, const PacketHeader& header,
                           std::span<const uint32_t> frags, const FragmentSender& sender) noexcept {
  if (frags.empty()) return {};
  try {
    // Sized before any pointer into headers_ is taken: out_ points at its elements.
    headers_.resize(frags.size());
    out_.resize(frags.size());
  } catch (...) {
    return Status(Errc::kResourceExhausted, "fragment batch");
  }
  for (size_t i = 0; i < frags.size(); ++i) {
    std::span<const std::byte> bytes = sender.fragment(frags[i]);
    headers_[i] = header;
    headers_[i].fragment = frags[i];
    out_[i] = OutDatagram{to, {{&headers_[i], sizeof header}, {const_cast<std::byte*>(bytes.data()), bytes.size()}}, 2};
  }
  // The sender waits for an ack after this batch: ask for one, in case the receiver's own
  // ack interval is longer than our window.
  if (sender.windowFull()) headers_[frags.size() - 1].flags |= kFlagAckNow;
  return endpoint.send({out_.data(), frags.size()});
}

}  // namespace lrpc::net
