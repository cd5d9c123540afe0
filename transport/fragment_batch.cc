#include "transport/fragment_batch.h"

#include <iterator>

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
    headers_[i] = header;
    headers_[i].fragment = frags[i];
    OutDatagram& d = out_[i];
    d = OutDatagram{to, {{&headers_[i], sizeof header}}, 1};
    // One piece, or two at an edge of a borrowed argument (FragmentSender::fragment).
    OutMessage::Pieces bytes = sender.fragment(frags[i]);
    for (uint32_t k = 0; k < bytes.count && d.iovCount < std::size(d.iov); ++k) {
      d.iov[d.iovCount++] = {const_cast<std::byte*>(bytes.at[k].data()), bytes.at[k].size()};
    }
  }
  // The sender waits for an ack after this batch: ask for one, in case the receiver's own
  // ack interval is longer than our window.
  if (sender.windowFull()) headers_[frags.size() - 1].flags |= kFlagAckNow;
  return endpoint.send({out_.data(), frags.size()});
}

}  // namespace lrpc::net
