// The bulk path's two halves, free of I/O so that tests drive them one packet at a time:
// FragmentSender walks a message out in fixed-size fragments under a window and resends
// only what the peer's selective acks say is missing; Reassembly writes fragments in place
// into the destination buffer and produces those acks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/remote_call.h"
#include "transport/wire.h"

namespace lrpc::net {

// A set of fragment indices as a bitmap (allocated once per large message).
class FragmentSet {
 public:
  void reset(uint32_t count) {
    words_.assign((count + 63) / 64, 0);
    count_ = count;
    size_ = 0;
  }
  bool contains(uint32_t i) const noexcept { return (words_[i / 64] >> (i % 64)) & 1; }
  // True when i was not in the set before.
  bool insert(uint32_t i) noexcept {
    uint64_t bit = uint64_t{1} << (i % 64);
    if (words_[i / 64] & bit) return false;
    words_[i / 64] |= bit;
    ++size_;
    return true;
  }
  uint32_t count() const noexcept { return count_; }
  uint32_t size() const noexcept { return size_; }
  // Membership of start, start + 1, ..., start + 63 as bits 0..63 (0 beyond count()):
  // acks are built and read a word at a time, not a bit at a time.
  uint64_t word(uint64_t start) const noexcept {
    if (start >= count_) return 0;
    size_t w = start / 64;
    unsigned s = start % 64;
    uint64_t bits = words_[w] >> s;
    if (s != 0 && w + 1 < words_.size()) bits |= words_[w + 1] << (64 - s);
    return bits;
  }

 private:
  std::vector<uint64_t> words_;
  uint32_t count_ = 0;
  uint32_t size_ = 0;
};

class FragmentSender {
 public:
  // `message` must outlive the sender (it is the caller's request or the cached reply).
  void reset(const OutMessage& message, size_t fragmentBytes, uint32_t window);
  uint32_t count() const noexcept { return acked_.count(); }
  bool complete() const noexcept { return acked_.size() == acked_.count(); }
  // Every fragment inside the window has been sent: nothing more goes out until an ack.
  bool windowFull() const noexcept {
    return next_ >= acked_.count() || uint64_t{next_} >= uint64_t{base_} + window_;
  }
  // Fragment i's bytes: one piece, or two where it straddles an edge of the borrowed range
  // (never three: the range is longer than any fragment, see kBorrowBytes in fragment.cc).
  OutMessage::Pieces fragment(uint32_t i) const noexcept;

  // Appends the fragments that may go out now (never sent, inside the window).
  void takeNew(std::vector<uint32_t>& out);
  // Appends the lowest sent-but-unacknowledged fragments inside the window, at most
  // kTimeoutResend of them (selective resend, on a timeout). Not the whole window: with
  // megabytes in flight, a timeout is as often a receiver that was descheduled as a loss,
  // and the ack these few draw shows the receiver's holes, which takeHoles then fills.
  static constexpr uint32_t kTimeoutResend = 64;
  void takeMissing(std::vector<uint32_t>& out);
  // Appends holes the peer's acks reveal: unacknowledged fragments at least kDupThresh
  // below the highest acknowledged one, each once per timeout (fast retransmit).
  static constexpr uint32_t kDupThresh = 3;
  void takeHoles(std::vector<uint32_t>& out);
  // Applies the peer's ack; true when it acknowledged something new.
  bool onAck(const AckBody& ack) noexcept;

 private:
  OutMessage message_{std::span<const std::byte>()};
  size_t fragmentBytes_ = 0;
  uint32_t window_ = 0;
  uint32_t base_ = 0;  // lowest unacknowledged fragment
  uint32_t next_ = 0;  // lowest never-sent fragment
  uint32_t highest_ = 0;  // one past the highest acknowledged fragment
  FragmentSet acked_;
  FragmentSet fastResent_;
};

// How often a receiver acks when the window is `window` fragments: every quarter window,
// so that the sender hears back several times per window and never stalls on a full one,
// and at least every 256 fragments (a sender configured with a smaller window than ours
// still hears back within its window as long as that is at least 256).
constexpr uint32_t ackEvery(uint32_t window) noexcept {
  uint32_t quarter = window / 4 > 1 ? window / 4 : 1;
  return quarter < 256 ? quarter : 256;
}

class Reassembly {
 public:
  enum class Accept { kNew, kDuplicate };

  // Sizes `dest` to `total` bytes (bounded by the caller) and expects fragments of
  // `fragmentBytes` (the last one shorter); an ack falls due every `ackEvery` fragments.
  // With `apart` (at most `total` bytes), the message's last apart.size() bytes go there
  // instead, and `dest` holds only the bytes before them (CallChannel::callApart).
  Status begin(uint32_t total, size_t fragmentBytes, MessageBuffer& dest, uint32_t ackEvery = 16,
               std::span<std::byte> apart = {}) noexcept;
  bool active() const noexcept { return dest_ != nullptr; }
  // Checks the fragment against the message geometry and copies it into place.
  Result<Accept> accept(const PacketHeader& h, std::span<const std::byte> payload) noexcept;
  bool complete() const noexcept { return received_.size() == received_.count(); }
  AckBody ack() const noexcept;
  // Whether an ack is due after the last accept(): every `ackEvery` fragments, and at once
  // on a duplicate (the sender resent, so our last ack was probably lost), but then not
  // again for a duplicate until `ackEvery` more fragments arrived: a resent window is
  // answered with one ack, not with one ack per duplicate.
  bool ackDue() const noexcept { return sinceAck_ >= ackEvery_ || duplicateDue_ || ackNow_; }
  // An ack was sent.
  void acked() noexcept;
  void clear() noexcept {
    dest_ = nullptr;
    apart_ = {};
  }

 private:
  MessageBuffer* dest_ = nullptr;
  std::span<std::byte> apart_;  // the message's last bytes, when they go elsewhere
  uint32_t total_ = 0;
  size_t fragmentBytes_ = 0;
  uint32_t cumulative_ = 0;
  uint32_t sinceAck_ = 0;
  uint32_t ackEvery_ = 16;
  uint32_t sinceDuplicateAck_ = UINT32_MAX;  // fragments since a duplicate made us ack
  bool duplicateDue_ = false;
  bool ackNow_ = false;  // a fragment carried kFlagAckNow since the last ack
  FragmentSet received_;
};

}  // namespace lrpc::net
