#include "transport/fragment.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace lrpc::net {

// A fragment shorter than a borrowed range can hold at most one of its two edges.
static_assert(RemoteCall::kBorrowBytes > kMaxDatagramLimit - kHeaderBytes);

void FragmentSender::reset(const OutMessage& message, size_t fragmentBytes, uint32_t window) {
  message_ = message;
  fragmentBytes_ = fragmentBytes;
  window_ = std::max<uint32_t>(1, std::min(window, kAckBits));
  base_ = 0;
  next_ = 0;
  highest_ = 0;
  acked_.reset(fragmentCount(message.size(), fragmentBytes));
  fastResent_.reset(acked_.count());
}

OutMessage::Pieces FragmentSender::fragment(uint32_t i) const noexcept {
  return message_.pieces(size_t{i} * fragmentBytes_, fragmentBytes_);
}

void FragmentSender::takeNew(std::vector<uint32_t>& out) {
  uint32_t end = std::min<uint64_t>(acked_.count(), uint64_t{base_} + window_);
  for (; next_ < end; ++next_) {
    if (!acked_.contains(next_)) out.push_back(next_);
  }
}

void FragmentSender::takeMissing(std::vector<uint32_t>& out) {
  fastResent_.reset(acked_.count());
  uint32_t taken = 0;
  for (uint32_t i = base_; i < next_ && taken < kTimeoutResend; ++i) {
    if (!acked_.contains(i)) {
      out.push_back(i);
      ++taken;
    }
  }
}

void FragmentSender::takeHoles(std::vector<uint32_t>& out) {
  if (highest_ < kDupThresh) return;
  for (uint32_t i = base_; i + kDupThresh < highest_; ++i) {
    if (!acked_.contains(i) && fastResent_.insert(i)) out.push_back(i);
  }
}

bool FragmentSender::onAck(const AckBody& ack) noexcept {
  bool progress = false;
  uint32_t n = acked_.count();
  // Only fragments already sent can be acknowledged; anything else is a confused or
  // hostile peer and is ignored.
  uint32_t cum = std::min(ack.cumulative, next_);
  for (uint32_t i = base_; i < cum; ++i) progress |= acked_.insert(i);
  highest_ = std::max(highest_, cum);
  for (uint32_t k = 0; k < kAckBits / 64; ++k) {
    uint64_t first = uint64_t{ack.cumulative} + 1 + uint64_t{k} * 64;
    if (first >= next_) break;
    // Only the set bits: a bulk ack is mostly ones or mostly zeros.
    for (uint64_t w = ack.bits[k]; w != 0; w &= w - 1) {
      uint64_t i = first + static_cast<unsigned>(std::countr_zero(w));
      if (i >= next_ || i >= n) break;
      progress |= acked_.insert(static_cast<uint32_t>(i));
      highest_ = std::max(highest_, static_cast<uint32_t>(i) + 1);
    }
  }
  while (base_ < n && acked_.contains(base_)) ++base_;
  return progress;
}

Status Reassembly::begin(uint32_t total, size_t fragmentBytes, MessageBuffer& dest, uint32_t ackEvery,
                         std::span<std::byte> apart) noexcept {
  if (apart.size() > total) return Status(Errc::kInvalidArgument, "reassembly: more bytes apart than in the message");
  // Not zeroed: accept() copies every byte in before complete() lets anyone read them.
  if (Status s = dest.resizeForOverwrite(total - apart.size()); !s.isOk()) return s;
  dest_ = &dest;
  apart_ = apart;
  total_ = total;
  fragmentBytes_ = fragmentBytes;
  cumulative_ = 0;
  sinceAck_ = 0;
  ackEvery_ = std::max<uint32_t>(1, ackEvery);
  sinceDuplicateAck_ = UINT32_MAX;
  duplicateDue_ = false;
  ackNow_ = false;
  try {
    received_.reset(fragmentCount(total, fragmentBytes));
  } catch (...) {
    dest_ = nullptr;
    return Status(Errc::kResourceExhausted, "reassembly bitmap");
  }
  return {};
}

Result<Reassembly::Accept> Reassembly::accept(const PacketHeader& h, std::span<const std::byte> payload) noexcept {
  if (h.total != total_) return Status(Errc::kBadFrame, "fragment of a different message size");
  uint32_t n = received_.count();
  if (h.fragment >= n) return Status(Errc::kBadFrame, "fragment index out of range");
  size_t off = size_t{h.fragment} * fragmentBytes_;
  size_t want = std::min(fragmentBytes_, size_t{total_} - off);
  if (payload.size() != want) return Status(Errc::kBadFrame, "fragment size does not match the geometry");
  ++sinceAck_;
  if ((h.flags & kFlagAckNow) != 0) ackNow_ = true;
  if (sinceDuplicateAck_ != UINT32_MAX) ++sinceDuplicateAck_;
  if (!received_.insert(h.fragment)) {
    if (sinceDuplicateAck_ >= ackEvery_) duplicateDue_ = true;
    return Accept::kDuplicate;
  }
  // The bytes before the edge go to dest_, those after it apart (with nothing apart the edge
  // is the end); a fragment may straddle it.
  const size_t edge = size_t{total_} - apart_.size();
  if (off < edge) std::memcpy(dest_->data() + off, payload.data(), std::min(want, edge - off));
  if (off + want > edge) {
    const size_t from = std::max(off, edge);
    std::memcpy(apart_.data() + (from - edge), payload.data() + (from - off), off + want - from);
  }
  while (cumulative_ < n && received_.contains(cumulative_)) ++cumulative_;
  return Accept::kNew;
}

void Reassembly::acked() noexcept {
  sinceAck_ = 0;
  ackNow_ = false;
  if (duplicateDue_) sinceDuplicateAck_ = 0;
  duplicateDue_ = false;
}

AckBody Reassembly::ack() const noexcept {
  AckBody a{};
  a.cumulative = cumulative_;
  a.complete = complete() ? 1 : 0;
  for (uint32_t k = 0; k < kAckBits / 64; ++k) a.bits[k] = received_.word(uint64_t{cumulative_} + 1 + uint64_t{k} * 64);
  return a;
}

}  // namespace lrpc::net
