// The datagrams for a list of a message's fragments, built once and handed to the endpoint
// as one batch: consecutive fragments then leave as a few UDP_SEGMENT sends (up to 44 full
// fragments each) and a few io_uring submissions, rather than one system call per chunk of
// a fixed-size array. Shared by the client (request fragments) and the server (reply
// fragments); the storage is kept between calls, so a steady bulk transfer allocates nothing.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runtime/base/status.h"
#include "transport/endpoint.h"
#include "transport/fragment.h"
#include "transport/wire.h"

namespace lrpc::net {

class FragmentBatch {
 public:
  // Sends fragments `frags` of `sender`'s message to `to`, each under `header` with its own
  // index. The endpoint's status comes back (kPeerDied when the peer's port is closed);
  // kResourceExhausted when the batch's storage could not grow (nothing sent: the
  // retransmission timer covers it, as for a lost datagram).
  Status send(Endpoint& endpoint, NetAddress to, const PacketHeader& header, std::span<const uint32_t> frags,
              const FragmentSender& sender) noexcept;

 private:
  std::vector<PacketHeader> headers_;
  std::vector<OutDatagram> out_;
};

}  // namespace lrpc::net
