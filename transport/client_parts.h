// What the parts of UdpChannel share (client.cc, client_open.cc, client_receive.cc): a call's
// state while it is in flight, and the endpoint's way into the channel. Internal to transport/.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "transport/client.h"

namespace lrpc::net {

using Clock = std::chrono::steady_clock;

struct UdpChannel::Pending {
  uint32_t seq = 0;
  uint16_t procedure = 0;
  OutMessage request{std::span<const std::byte>()};
  MessageBuffer* reply = nullptr;
  // callApart: a large reply's bytes from tailFrom on go to *tail, and *apart says so.
  std::vector<uint8_t>* tail = nullptr;
  size_t tailFrom = 0;
  bool* apart = nullptr;
  bool done = false;
  Status status;
  bool fragmented = false;   // request needs more than one datagram
  bool requestAcked = false;  // every request fragment acknowledged
  FragmentSender sender;
  Reassembly reassembly;
  uint8_t replyStatus = 0;
  Clock::time_point deadline = Clock::time_point::max();
  Clock::time_point nextRetransmit;
  Clock::duration rto{};
  uint32_t retries = 0;
  bool heard = false;  // new fragments or acks since onTimers last ran: restart the timer there
  // An asynchronous call (startAsync): its slot is let go as soon as it finishes, as no
  // caller's stack waits to do that.
  bool detached = false;
  // Objects of our callback host that the handler dropped (the reply's kFlagReleases):
  // released by the caller, outside every lock, before its call returns.
  uint32_t releaseCount = 0;
  uint32_t releases[kMaxReplyReleases];
};

class UdpChannel::Sink final : public DatagramSink {
 public:
  explicit Sink(UdpChannel& c) : c_(c) {}
  void onDatagram(const Datagram& d) noexcept override {
    MutexLock lock(c_.mu_);
    c_.onDatagram(d);
  }

 private:
  UdpChannel& c_;
};

}  // namespace lrpc::net
