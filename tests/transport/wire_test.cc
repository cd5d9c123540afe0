// The packet encoder/decoder and the fragment state machines, one packet at a time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "transport/fragment.h"
#include "transport/fragment_batch.h"
#include "transport/loopback.h"
#include "transport/wire.h"

namespace lrpc::net {
namespace {

// A fragment's pieces in one buffer, as the datagram carries them.
std::vector<std::byte> bytesOf(const OutMessage::Pieces& p) {
  std::vector<std::byte> out;
  for (uint32_t i = 0; i < p.count; ++i) out.insert(out.end(), p.at[i].begin(), p.at[i].end());
  return out;
}

std::vector<std::byte> packet(PacketHeader h, std::span<const std::byte> payload) {
  std::vector<std::byte> out(sizeof h + payload.size());
  std::memcpy(out.data(), &h, sizeof h);
  if (!payload.empty()) std::memcpy(out.data() + sizeof h, payload.data(), payload.size());
  return out;
}

PacketHeader request(uint32_t total) {
  PacketHeader h = makeHeader(PacketType::kRequest, 7, 0x1234, 9);
  h.total = total;
  return h;
}

// Runs `sender` against `reasm` until the message is complete (at most 1000 rounds): each
// round the holes and new fragments, and every fifth round a timeout's resend, go out in
// random order, one in `lossOneIn` lost; then the receiver's ack comes back. Returns how
// many fragments were sent.
uint32_t transfer(FragmentSender& sender, Reassembly& reasm, uint32_t total, std::mt19937& rng, uint32_t lossOneIn) {
  std::vector<uint32_t> out;
  uint32_t sent = 0;
  for (int round = 0; round < 1000 && !reasm.complete(); ++round) {
    out.clear();
    if (round % 5 == 4) sender.takeMissing(out);
    sender.takeHoles(out);
    sender.takeNew(out);
    std::shuffle(out.begin(), out.end(), rng);
    for (uint32_t f : out) {
      ++sent;
      if (rng() % lossOneIn == 0) continue;  // lost
      PacketHeader h = request(total);
      h.flags = kFlagFragment;
      h.fragment = f;
      EXPECT_TRUE(reasm.accept(h, bytesOf(sender.fragment(f))).isOk());
    }
    sender.onAck(reasm.ack());
  }
  return sent;
}

TEST(Wire, HeaderLayoutIsFixed) {
  PacketHeader h = makeHeader(PacketType::kReply, 0x01020304, 0x1112131415161718ull, 0x21222324);
  h.procedure = 0x3132;
  h.fragment = 0x41424344;
  h.total = 0x51525354;
  uint8_t raw[32];
  std::memcpy(raw, &h, sizeof raw);
  EXPECT_EQ(raw[0], 0x4c);  // "LR", little-endian
  EXPECT_EQ(raw[1], 0x52);
  EXPECT_EQ(raw[2], kVersion);
  EXPECT_EQ(raw[3], 4);
  EXPECT_EQ(raw[6], 0x32);
  EXPECT_EQ(raw[8], 0x18);
  EXPECT_EQ(raw[16], 0x04);
  EXPECT_EQ(raw[20], 0x24);
  EXPECT_EQ(raw[24], 0x44);
  EXPECT_EQ(raw[28], 0x54);
}

TEST(Wire, RoundTrip) {
  std::byte payload[12] = {std::byte{1}, std::byte{2}};
  auto bytes = packet(request(12), payload);
  auto p = decodePacket(bytes);
  ASSERT_TRUE(p.isOk()) << p.status().toString();
  EXPECT_EQ(p->type(), PacketType::kRequest);
  EXPECT_EQ(p->header.session, 7u);
  EXPECT_EQ(p->header.cookie, 0x1234u);
  EXPECT_EQ(p->header.seq, 9u);
  EXPECT_EQ(p->payload.size(), 12u);
  EXPECT_EQ(p->payload.data(), bytes.data() + 32);  // in place, no copy
}

TEST(Wire, RejectsMalformed) {
  std::byte payload[8] = {};
  auto good = packet(request(8), payload);
  ASSERT_TRUE(decodePacket(good).isOk());
  auto expectBad = [](std::vector<std::byte> b, const char* why) {
    auto p = decodePacket(b);
    EXPECT_FALSE(p.isOk()) << why;
    if (!p.isOk()) {
      EXPECT_EQ(p.status(), Errc::kBadFrame) << why;
    }
  };
  expectBad({}, "empty");
  expectBad(std::vector<std::byte>(good.begin(), good.begin() + 31), "short header");
  expectBad(std::vector<std::byte>(good.begin(), good.end() - 1), "truncated payload");
  auto b = good;
  b[0] = std::byte{0};
  expectBad(b, "magic");
  b = good;
  b[2] = std::byte{kVersion + 1};
  expectBad(b, "version");
  for (uint8_t t : {uint8_t{0}, uint8_t(kLastPacketType + 1), uint8_t{255}}) {
    b = good;
    b[3] = std::byte{t};
    expectBad(b, "type");
  }
  b = good;
  b[4] = std::byte{0x80};
  expectBad(b, "flags");
  b = good;
  b[5] = std::byte{200};
  expectBad(b, "status");
  PacketHeader h = request(8);
  h.fragment = 1;
  expectBad(packet(h, payload), "fragment index without the fragment flag");
  h = request(100);
  h.flags = kFlagFragment;
  h.fragment = 100;
  expectBad(packet(h, payload), "fragment index beyond total");
  h = request(4);
  h.flags = kFlagFragment;
  expectBad(packet(h, payload), "fragment longer than total");
  h = makeHeader(PacketType::kAck, 1, 1, 1);
  h.flags = kFlagFragment;
  h.total = 8;
  expectBad(packet(h, payload), "fragmented ack");
  std::vector<std::byte> big(40);
  h = request(40);
  h.flags = kFlagSingleCell;
  expectBad(packet(h, big), "single-cell flag on 72 bytes");
}

// A reply's releases (kFlagReleases): only on a whole, successful reply, and a trailer that
// names 1..16 ids inside the payload; anything else is a bad frame, never an id read from
// outside the datagram.
TEST(Wire, ReleasesRideOnlyOnWholeSuccessfulReplies) {
  auto words = [](std::vector<uint32_t> w) {
    std::vector<std::byte> out(w.size() * 4);
    if (!w.empty()) std::memcpy(out.data(), w.data(), out.size());
    return out;
  };
  // Results 0xAA 0xBB, then ids 7 and 9, then the count 2.
  std::vector<std::byte> payload{std::byte{0xAA}, std::byte{0xBB}};
  const std::vector<std::byte> trailer = words({7, 9, 2});
  payload.insert(payload.end(), trailer.begin(), trailer.end());
  PacketHeader h = makeHeader(PacketType::kReply, 7, 0x1234, 9);
  h.flags = kFlagReleases;
  h.total = static_cast<uint32_t>(payload.size());
  const std::vector<std::byte> datagram = packet(h, payload);  // the decoded payload points into it
  auto decoded = decodePacket(datagram);
  ASSERT_TRUE(decoded.isOk()) << decoded.status().toString();
  uint32_t ids[kMaxReplyReleases] = {};
  uint32_t count = 0;
  auto results = splitReleases(decoded->payload, ids, &count);
  ASSERT_TRUE(results.isOk()) << results.status().toString();
  ASSERT_EQ(results->size(), 2u);
  EXPECT_EQ((*results)[1], std::byte{0xBB});
  ASSERT_EQ(count, 2u);
  EXPECT_EQ(ids[0], 7u);
  EXPECT_EQ(ids[1], 9u);
  // Results may be empty: the trailer alone.
  const std::vector<std::byte> bare = words({5, 1});
  ASSERT_TRUE(splitReleases(bare, ids, &count).isOk());
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(ids[0], 5u);

  // Malformed trailers.
  for (const std::vector<std::byte>& bad :
       {std::vector<std::byte>{}, std::vector<std::byte>(3), words({0}), words({1}), words({5, 2}),
        words({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 17}), words({0xFFFFFFFFu})}) {
    count = 99;
    EXPECT_EQ(splitReleases(bad, ids, &count).status().code(), Errc::kBadFrame) << bad.size();
    EXPECT_EQ(count, 99u) << "nothing taken from a bad trailer";
  }
  // The largest count is taken.
  std::vector<uint32_t> most(kMaxReplyReleases, 3);
  most.push_back(kMaxReplyReleases);
  EXPECT_TRUE(splitReleases(words(most), ids, &count).isOk());
  EXPECT_EQ(count, kMaxReplyReleases);

  // The flag anywhere else.
  PacketHeader onRequest = request(static_cast<uint32_t>(payload.size()));
  onRequest.flags = kFlagReleases;
  EXPECT_FALSE(decodePacket(packet(onRequest, payload)).isOk());
  PacketHeader onError = h;
  onError.status = static_cast<uint8_t>(Errc::kApplication);
  EXPECT_FALSE(decodePacket(packet(onError, payload)).isOk());
  PacketHeader onFragment = h;
  onFragment.flags = kFlagReleases | kFlagFragment;
  onFragment.total = static_cast<uint32_t>(payload.size() * 2);
  EXPECT_FALSE(decodePacket(packet(onFragment, payload)).isOk());
}

TEST(Wire, HelloRoundTripAndLimits) {
  HelloBody body{};
  body.ifaceId = 42;
  body.signatureHash = 43;
  body.window = 8;
  body.maxDatagram = 1472;
  std::string out;
  ASSERT_TRUE(encodeHello(body, "paper", "paper.capnp:Paper", out).isOk());
  auto h = decodeHello(std::as_bytes(std::span(out.data(), out.size())));
  ASSERT_TRUE(h.isOk());
  EXPECT_EQ(h->name, "paper");
  EXPECT_EQ(h->ifaceName, "paper.capnp:Paper");
  EXPECT_EQ(h->body.ifaceId, 42u);
  out.pop_back();
  EXPECT_FALSE(decodeHello(std::as_bytes(std::span(out.data(), out.size()))).isOk());
  EXPECT_FALSE(encodeHello(body, std::string(257, 'x'), "", out).isOk());
}

TEST(Wire, AckAndWelcomeSizes) {
  AckBody a{};
  a.complete = 2;
  EXPECT_FALSE(decodeAck(std::as_bytes(std::span(&a, 1))).isOk());
  a.complete = 1;
  EXPECT_TRUE(decodeAck(std::as_bytes(std::span(&a, 1))).isOk());
  std::byte small[4] = {};
  EXPECT_FALSE(decodeAck(small).isOk());
  EXPECT_FALSE(decodeWelcome(small).isOk());
  EXPECT_EQ(fragmentCount(0, 1440), 1u);
  EXPECT_EQ(fragmentCount(1440, 1440), 1u);
  EXPECT_EQ(fragmentCount(1441, 1440), 2u);
}

// Sender and reassembly against each other through a lossy, reordering "wire" driven by
// hand: every byte arrives exactly once in place, and only missing fragments are resent.
TEST(Fragments, TransferUnderLossAndReorder) {
  std::mt19937 rng(3);
  std::vector<std::byte> msg(100000);
  for (auto& b : msg) b = std::byte(rng());
  FragmentSender sender;
  sender.reset(std::span<const std::byte>(msg), 1000, 16);
  MessageBuffer dest;
  Reassembly reasm;
  ASSERT_TRUE(reasm.begin(static_cast<uint32_t>(msg.size()), 1000, dest).isOk());
  const uint32_t sent = transfer(sender, reasm, static_cast<uint32_t>(msg.size()), rng, 10);
  ASSERT_TRUE(reasm.complete());
  EXPECT_TRUE(sender.complete());
  EXPECT_EQ(std::memcmp(dest.data(), msg.data(), msg.size()), 0);
  EXPECT_LT(sent, 100u * 2);  // selective: far from resending everything every time
}

// A request that borrows a large argument (RemoteCall::copyTail) goes out as the frame's
// bytes with the borrowed range read from the caller's memory: each fragment is one piece or,
// at an edge of the range, two, and the receiver reassembles exactly the message the frame
// would hold with the value copied in. The frame's own bytes in the range are never sent.
TEST(Fragments, BorrowedRangeIsSentFromTheCallersMemory) {
  std::mt19937 rng(5);
  const size_t kFrag = 1000;
  std::vector<std::byte> frame(40 + 70000 + 13, std::byte{0xEE});  // 0xEE: never sent
  std::vector<std::byte> value(70000);
  for (auto& b : value) b = std::byte(rng() | 1);
  for (size_t i = 0; i < 40; ++i) frame[i] = std::byte(i);
  for (size_t i = 0; i < 13; ++i) frame[40 + value.size() + i] = std::byte(100 + i);
  const OutMessage message(frame, 40, value);
  std::vector<std::byte> expected(frame);
  std::memcpy(expected.data() + 40, value.data(), value.size());

  std::vector<std::byte> flat(message.size());
  ASSERT_EQ(message.copy(0, message.size(), flat.data()), message.size());
  EXPECT_EQ(flat, expected);
  EXPECT_EQ(message.pieces(message.size(), 5).count, 0u);
  EXPECT_EQ(message.pieces(30, 0).count, 0u);
  OutMessage::Pieces all = message.pieces(0, SIZE_MAX);
  ASSERT_EQ(all.count, 3u);
  EXPECT_EQ(all.at[1].data(), value.data());

  FragmentSender sender;
  sender.reset(message, kFrag, 16);
  MessageBuffer dest;
  Reassembly reasm;
  ASSERT_TRUE(reasm.begin(static_cast<uint32_t>(message.size()), kFrag, dest).isOk());
  std::vector<uint32_t> out;
  for (int round = 0; round < 1000 && !reasm.complete(); ++round) {
    out.clear();
    if (round % 5 == 4) sender.takeMissing(out);
    sender.takeHoles(out);
    sender.takeNew(out);
    for (uint32_t f : out) {
      OutMessage::Pieces p = sender.fragment(f);
      ASSERT_GE(p.count, 1u);
      ASSERT_LE(p.count, 2u);  // a datagram has room for the header and two pieces
      if (rng() % 8 == 0) continue;  // lost: resent from the caller's memory again
      PacketHeader h = request(static_cast<uint32_t>(message.size()));
      h.flags = kFlagFragment;
      h.fragment = f;
      ASSERT_TRUE(reasm.accept(h, bytesOf(p)).isOk());
    }
    sender.onAck(reasm.ack());
  }
  ASSERT_TRUE(reasm.complete());
  ASSERT_EQ(dest.size(), expected.size());
  EXPECT_EQ(std::memcmp(dest.data(), expected.data(), expected.size()), 0);
}

// With part of the message apart (CallChannel::callApart), the fragments before the edge
// go to the frame buffer and those after it to the apart buffer; the one across the edge
// is split between them.
TEST(Fragments, ApartTailIsReassembledInItsOwnBuffer) {
  std::mt19937 rng(9);
  std::vector<std::byte> msg(10000);
  for (auto& b : msg) b = std::byte(rng());
  const size_t kEdge = 2700;  // inside fragment 2
  FragmentSender sender;
  sender.reset(std::span<const std::byte>(msg), 1000, 16);
  MessageBuffer dest;
  std::vector<std::byte> apart(msg.size() - kEdge, std::byte{0xEE});
  Reassembly reasm;
  ASSERT_TRUE(reasm.begin(static_cast<uint32_t>(msg.size()), 1000, dest, 4, apart).isOk());
  EXPECT_EQ(dest.size(), kEdge);
  transfer(sender, reasm, static_cast<uint32_t>(msg.size()), rng, 6);
  ASSERT_TRUE(reasm.complete());
  ASSERT_EQ(dest.size(), kEdge);
  EXPECT_EQ(std::memcmp(dest.data(), msg.data(), kEdge), 0);
  EXPECT_TRUE(std::equal(apart.begin(), apart.end(), msg.begin() + kEdge));

  // More apart than the whole message is refused; all of it apart is fine.
  MessageBuffer other;
  std::vector<std::byte> tooLong(msg.size() + 1);
  EXPECT_EQ(reasm.begin(static_cast<uint32_t>(msg.size()), 1000, other, 4, tooLong).code(), Errc::kInvalidArgument);
  std::vector<std::byte> all(msg.size());
  EXPECT_TRUE(reasm.begin(static_cast<uint32_t>(msg.size()), 1000, other, 4, all).isOk());
  EXPECT_EQ(other.size(), 0u);
}

TEST(Fragments, ReassemblyRejectsWrongGeometry) {
  MessageBuffer dest;
  Reassembly r;
  ASSERT_TRUE(r.begin(2500, 1000, dest).isOk());
  std::vector<std::byte> frag(1000);
  PacketHeader h = request(2500);
  h.flags = kFlagFragment;
  h.fragment = 2;
  EXPECT_FALSE(r.accept(h, frag).isOk());  // the last fragment is 500 bytes
  h.fragment = 3;
  EXPECT_FALSE(r.accept(h, std::span(frag).first(500)).isOk());  // beyond the message
  h.fragment = 0;
  h.total = 2400;
  EXPECT_FALSE(r.accept(h, frag).isOk());  // another message's size
  h.total = 2500;
  auto a = r.accept(h, frag);
  ASSERT_TRUE(a.isOk());
  EXPECT_EQ(*a, Reassembly::Accept::kNew);
  a = r.accept(h, frag);
  ASSERT_TRUE(a.isOk());
  EXPECT_EQ(*a, Reassembly::Accept::kDuplicate);
  AckBody ack = r.ack();
  EXPECT_EQ(ack.cumulative, 1u);
  EXPECT_EQ(ack.complete, 0u);
}

TEST(Fragments, AckForUnsentFragmentsIsIgnored) {
  std::vector<std::byte> msg(10000);
  FragmentSender s;
  s.reset(std::span<const std::byte>(msg), 1000, 4);
  std::vector<uint32_t> out;
  s.takeNew(out);
  ASSERT_EQ(out.size(), 4u);
  AckBody lie{};
  lie.cumulative = 10;  // claims fragments never sent
  lie.bits[0] = ~uint64_t{0};
  s.onAck(lie);
  EXPECT_FALSE(s.complete());
  out.clear();
  s.takeNew(out);
  EXPECT_EQ(out.size(), 4u);  // only the four sent ones counted
}

// A window as wide as the ack bitmap: one lost fragment at the bottom of 2048 in flight is
// seen as the only hole (the bitmap reaches the top of the window) and resent alone.
TEST(Fragments, AckBitmapSpansTheLargestWindow) {
  constexpr size_t kFrag = 100;
  std::vector<std::byte> msg(kFrag * 3000);
  for (size_t i = 0; i < msg.size(); ++i) msg[i] = std::byte(i * 7);
  FragmentSender sender;
  sender.reset(std::span<const std::byte>(msg), kFrag, kAckBits);
  MessageBuffer dest;
  Reassembly reasm;
  ASSERT_TRUE(reasm.begin(static_cast<uint32_t>(msg.size()), kFrag, dest).isOk());
  std::vector<uint32_t> out;
  sender.takeNew(out);
  ASSERT_EQ(out.size(), kAckBits);
  auto deliver = [&](uint32_t f) {
    PacketHeader h = request(static_cast<uint32_t>(msg.size()));
    h.flags = kFlagFragment;
    h.fragment = f;
    ASSERT_TRUE(reasm.accept(h, bytesOf(sender.fragment(f))).isOk());
  };
  for (uint32_t f : out) {
    if (f != 0) deliver(f);
  }
  AckBody ack = reasm.ack();
  EXPECT_EQ(ack.cumulative, 0u);
  EXPECT_EQ(ack.bits[kAckBits / 64 - 1] >> 62, 1u);  // fragment 2047 (bit 2046) is there
  EXPECT_TRUE(sender.onAck(ack));
  out.clear();
  sender.takeHoles(out);
  EXPECT_EQ(out, std::vector<uint32_t>{0});
  deliver(0);
  EXPECT_TRUE(sender.onAck(reasm.ack()));
  out.clear();
  sender.takeNew(out);  // the window slid by all 2048 at once
  EXPECT_EQ(out.size(), 3000u - kAckBits);
  for (uint32_t f : out) deliver(f);
  ASSERT_TRUE(reasm.complete());
  EXPECT_TRUE(sender.onAck(reasm.ack()));
  EXPECT_TRUE(sender.complete());
  EXPECT_EQ(std::memcmp(dest.data(), msg.data(), msg.size()), 0);
}

// A timeout resends only the lowest few missing fragments, not megabytes of window: the
// ack they draw shows the rest.
TEST(Fragments, TimeoutResendIsBounded) {
  std::vector<std::byte> msg(100 * 2000);
  FragmentSender sender;
  sender.reset(std::span<const std::byte>(msg), 100, 1024);
  std::vector<uint32_t> out;
  sender.takeNew(out);
  ASSERT_EQ(out.size(), 1024u);
  out.clear();
  sender.takeMissing(out);
  ASSERT_EQ(out.size(), FragmentSender::kTimeoutResend);
  for (uint32_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], i);
}

// Acks fall due every `ackEvery` fragments, and at once on a duplicate, but a burst of
// duplicates (a resent batch) draws one ack, not one each.
TEST(Fragments, DuplicatesDrawOneAckPerBurst) {
  std::vector<std::byte> frag(100);
  MessageBuffer dest;
  Reassembly r;
  ASSERT_TRUE(r.begin(100 * 64, 100, dest, 8).isOk());
  auto accept = [&](uint32_t f) {
    PacketHeader h = request(100 * 64);
    h.flags = kFlagFragment;
    h.fragment = f;
    ASSERT_TRUE(r.accept(h, frag).isOk());
  };
  for (uint32_t f = 0; f < 7; ++f) {
    accept(f);
    EXPECT_FALSE(r.ackDue());
  }
  accept(7);
  EXPECT_TRUE(r.ackDue());
  r.acked();
  accept(3);  // a duplicate: our ack may have been lost
  EXPECT_TRUE(r.ackDue());
  r.acked();
  int due = 0;
  for (uint32_t f = 0; f < 7; ++f) {
    accept(f);  // the rest of the resent burst
    due += r.ackDue() ? 1 : 0;
  }
  EXPECT_EQ(due, 0);
  accept(8);
  EXPECT_TRUE(r.ackDue());  // 8 fragments since the last ack
  r.acked();
  accept(2);
  EXPECT_TRUE(r.ackDue());  // a later duplicate, past the gap, is answered again
}

// A sender whose window is smaller than the receiver's ack interval marks the last fragment
// it can send (kFlagAckNow), and the receiver acks at once instead of waiting for fragments
// that cannot come until it does.
TEST(Fragments, FullWindowAsksForAnAckNow) {
  auto net = std::make_shared<LoopbackNetwork>();
  std::vector<PacketHeader> seen;
  net->setTap([&](NetAddress, NetAddress, std::span<const std::byte> bytes) {
    PacketHeader h;
    std::memcpy(&h, bytes.data(), sizeof h);
    seen.push_back(h);
  });
  std::unique_ptr<Endpoint> from = net->open();
  std::unique_ptr<Endpoint> to = net->open();
  std::vector<std::byte> msg(100 * 40);
  FragmentSender sender;
  sender.reset(std::span<const std::byte>(msg), 100, 16);
  std::vector<uint32_t> frags;
  sender.takeNew(frags);
  ASSERT_EQ(frags.size(), 16u);
  EXPECT_TRUE(sender.windowFull());
  FragmentBatch batch;
  PacketHeader h = request(static_cast<uint32_t>(msg.size()));
  h.flags = kFlagFragment;
  ASSERT_TRUE(batch.send(*from, to->localAddress(), h, frags, sender).isOk());
  ASSERT_EQ(seen.size(), 16u);
  for (size_t i = 0; i + 1 < seen.size(); ++i) EXPECT_EQ(seen[i].flags & kFlagAckNow, 0) << i;
  EXPECT_NE(seen.back().flags & kFlagAckNow, 0);

  MessageBuffer dest;
  Reassembly r;
  ASSERT_TRUE(r.begin(static_cast<uint32_t>(msg.size()), 100, dest, ackEvery(1024)).isOk());  // acks every 256
  for (size_t i = 0; i < seen.size(); ++i) {
    ASSERT_TRUE(r.accept(seen[i], bytesOf(sender.fragment(seen[i].fragment))).isOk());
    EXPECT_EQ(r.ackDue(), i + 1 == seen.size()) << i;
  }
  r.acked();
  EXPECT_FALSE(r.ackDue());

  // A message that ends inside the window asks too (the sender waits for the ack that
  // completes it); a sender that has not sent its window yet is not full.
  FragmentSender wide;
  wide.reset(std::span<const std::byte>(msg), 100, 64);
  std::vector<uint32_t> some;
  wide.takeNew(some);
  EXPECT_TRUE(wide.windowFull());  // 40 fragments, all sent: the message ends here
  FragmentSender roomy;
  std::vector<std::byte> big(100 * 200);
  roomy.reset(std::span<const std::byte>(big), 100, 64);
  EXPECT_FALSE(roomy.windowFull());
}

// The flag belongs on fragments only.
TEST(Wire, AckNowOnAWholeMessageIsRejected) {
  std::vector<std::byte> payload(10);
  PacketHeader h = request(10);
  h.flags = kFlagAckNow;
  std::vector<std::byte> bytes(sizeof h + payload.size());
  std::memcpy(bytes.data(), &h, sizeof h);
  EXPECT_FALSE(decodePacket(bytes).isOk());
}

}  // namespace
}  // namespace lrpc::net
