// Sealed data datagrams: round trips, tampering, replays, sessions, rekeying with both
// generations in flight, and nonce exhaustion.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include "transport/secure/data_channel.h"

namespace lrpc::secure {
namespace {

using std::chrono::seconds;

struct Pair {
  Instant t0 = Clock::now();
  DataChannel client;
  DataChannel server;
};

std::pair<TransportKeys, TransportKeys> handshake() {
  auto server = KeyPair::generate();
  auto client = KeyPair::generate();
  EXPECT_TRUE(server.isOk() && client.isOk());
  ResponderOptions o;
  o.allowedClients = {client->publicKey()};
  auto responder = Responder::create(*server, o);
  auto initiator = Initiator::create(*client, server->publicKey());
  EXPECT_TRUE(responder.isOk() && initiator.isOk());
  auto hello = initiator->writeHello();
  EXPECT_TRUE(hello.isOk());
  auto outcome = responder->readHello(*hello, std::vector<uint8_t>{1, 2, 3});
  EXPECT_TRUE(outcome.isOk() && outcome->accepted);
  auto keys = initiator->readReply(outcome->reply);
  EXPECT_TRUE(keys.isOk());
  return {*keys, outcome->keys};
}

Pair makePair(DataOptions options = {}) {
  auto [ck, sk] = handshake();
  Instant t0 = Clock::now();
  auto c = DataChannel::create(ck, options, t0);
  auto s = DataChannel::create(sk, options, t0);
  EXPECT_TRUE(c.isOk() && s.isOk());
  return Pair{t0, std::move(*c), std::move(*s)};
}

std::vector<uint8_t> message(size_t n, uint8_t seed) {
  std::vector<uint8_t> m(n);
  std::iota(m.begin(), m.end(), seed);
  return m;
}

std::vector<uint8_t> seal(DataChannel& c, const std::vector<uint8_t>& plain, Instant now) {
  std::vector<uint8_t> out(plain.size() + DataChannel::kOverhead);
  auto n = c.seal(plain, out, now);
  EXPECT_TRUE(n.isOk()) << n.status().toString();
  out.resize(n.isOk() ? *n : 0);
  return out;
}

Result<std::vector<uint8_t>> open(DataChannel& c, const std::vector<uint8_t>& datagram, Instant now) {
  std::vector<uint8_t> out(datagram.size() >= DataChannel::kOverhead ? datagram.size() - DataChannel::kOverhead : 0);
  auto n = c.open(datagram, out, now);
  if (!n) return n.status();
  out.resize(*n);
  return out;
}

TEST(SecureDataChannel, RoundTripsBothWaysAndHidesThePayload) {
  Pair p = makePair();
  for (size_t n : {size_t{0}, size_t{1}, size_t{32}, size_t{1440}, size_t{65507 - 32}}) {
    auto plain = message(n, static_cast<uint8_t>(n));
    auto d = seal(p.client, plain, p.t0);
    ASSERT_EQ(d.size(), n + DataChannel::kOverhead);
    if (n >= 32) {
      EXPECT_EQ(std::search(d.begin(), d.end(), plain.begin(), plain.begin() + 32), d.end())
          << "no clear bytes of the payload on the wire";
    }
    auto got = open(p.server, d, p.t0);
    ASSERT_TRUE(got.isOk()) << got.status().toString();
    EXPECT_EQ(*got, plain);
    auto back = open(p.client, seal(p.server, plain, p.t0), p.t0);
    ASSERT_TRUE(back.isOk()) << back.status().toString();
    EXPECT_EQ(*back, plain);
  }
}

TEST(SecureDataChannel, SealsAndOpensInPlace) {
  Pair p = makePair();
  auto plain = message(100, 7);
  std::vector<uint8_t> buf(plain.size() + DataChannel::kOverhead);
  std::memcpy(buf.data() + data::kHeaderBytes, plain.data(), plain.size());
  auto n = p.client.seal(Bytes(buf.data() + data::kHeaderBytes, plain.size()), buf, p.t0);
  ASSERT_TRUE(n.isOk()) << n.status().toString();
  auto m = p.server.open(buf, MutableBytes(buf.data() + data::kHeaderBytes, plain.size()), p.t0);
  ASSERT_TRUE(m.isOk()) << m.status().toString();
  EXPECT_EQ(std::vector<uint8_t>(buf.begin() + data::kHeaderBytes, buf.begin() + data::kHeaderBytes + 100), plain);
}

TEST(SecureDataChannel, EveryTamperedByteFailsToOpen) {
  Pair p = makePair();
  auto plain = message(64, 1);
  auto d = seal(p.client, plain, p.t0);
  for (size_t i = 0; i < d.size(); ++i) {
    for (uint8_t flip : {uint8_t{0x01}, uint8_t{0x80}}) {
      auto bad = d;
      bad[i] ^= flip;
      auto got = open(p.server, bad, p.t0);
      ASSERT_FALSE(got.isOk()) << "byte " << i;
      EXPECT_EQ(got.status().code(), Errc::kBadFrame) << "byte " << i << ": " << got.status().toString();
    }
  }
  // None of that moved the window: the real datagram still opens, once.
  auto got = open(p.server, d, p.t0);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  EXPECT_EQ(*got, plain);
  EXPECT_EQ(open(p.server, d, p.t0).status().code(), Errc::kBadFrame);
}

TEST(SecureDataChannel, TruncatedExtendedAndForeignDatagramsFail) {
  Pair p = makePair();
  auto d = seal(p.client, message(40, 3), p.t0);
  for (size_t n = 0; n < d.size(); ++n) {
    std::vector<uint8_t> cut(d.begin(), d.begin() + static_cast<long>(n));
    EXPECT_EQ(open(p.server, cut, p.t0).status().code(), Errc::kBadFrame) << n;
  }
  auto longer = d;
  longer.push_back(0);
  EXPECT_EQ(open(p.server, longer, p.t0).status().code(), Errc::kBadFrame);
  // Another session's keys: refused even with the receiver index rewritten to ours.
  Pair q = makePair();
  auto other = seal(q.client, message(40, 3), q.t0);
  std::memcpy(other.data() + data::kReceiver, d.data() + data::kReceiver, 4);
  EXPECT_EQ(open(p.server, other, p.t0).status().code(), Errc::kBadFrame);
  // Our own datagram reflected back at us: the index is the peer's, and the key is too.
  EXPECT_EQ(open(p.client, d, p.t0).status().code(), Errc::kBadFrame);
  EXPECT_TRUE(open(p.server, d, p.t0).isOk());
}

TEST(SecureDataChannel, ReplaysAndReorderingThroughTheWindow) {
  Pair p = makePair();
  std::vector<std::vector<uint8_t>> ds;
  for (int i = 0; i < 200; ++i) ds.push_back(seal(p.client, message(16, static_cast<uint8_t>(i)), p.t0));
  // Out of order: odd ones first, then even ones; then everything again.
  for (int i = 1; i < 200; i += 2) ASSERT_TRUE(open(p.server, ds[i], p.t0).isOk()) << i;
  for (int i = 0; i < 200; i += 2) ASSERT_TRUE(open(p.server, ds[i], p.t0).isOk()) << i;
  for (int i = 0; i < 200; ++i) {
    auto again = open(p.server, ds[i], p.t0);
    ASSERT_FALSE(again.isOk()) << i;
    EXPECT_NE(again.status().detail().find("replayed"), std::string::npos);
  }
  // A datagram older than the window, delivered late, is refused as too old.
  auto late = seal(p.client, message(16, 0), p.t0);
  for (uint64_t i = 0; i < ReplayWindow::kWindow; ++i) (void)seal(p.client, message(1, 0), p.t0);
  auto newest = seal(p.client, message(1, 0), p.t0);
  ASSERT_TRUE(open(p.server, newest, p.t0).isOk());
  auto old = open(p.server, late, p.t0);
  ASSERT_FALSE(old.isOk());
  EXPECT_NE(old.status().detail().find("older"), std::string::npos);
}

TEST(SecureDataChannel, RekeyByCountWithBothGenerationsInFlight) {
  DataOptions o;
  o.rekeyAfterMessages = 50;
  Pair p = makePair(o);
  std::vector<std::vector<uint8_t>> gen0, gen1, gen2;
  for (int i = 0; i < 50; ++i) gen0.push_back(seal(p.client, message(20, static_cast<uint8_t>(i)), p.t0));
  EXPECT_EQ(p.client.sendGeneration(), 0u);
  for (int i = 0; i < 50; ++i) gen1.push_back(seal(p.client, message(20, static_cast<uint8_t>(i)), p.t0));
  EXPECT_EQ(p.client.sendGeneration(), 1u);
  EXPECT_EQ(gen1[0][3], 1u);
  EXPECT_EQ(std::memcmp(gen0[0].data() + data::kCounter, gen1[0].data() + data::kCounter, 8), 0)
      << "counters restart per generation; the key differs";
  EXPECT_NE(gen0[0], gen1[0]);
  // The new generation arrives first, then the old one's stragglers: none is lost.
  for (int i = 0; i < 25; ++i) ASSERT_TRUE(open(p.server, gen1[i], p.t0).isOk()) << i;
  EXPECT_EQ(p.server.receiveGeneration(), 1u);
  for (int i = 49; i >= 1; --i) ASSERT_TRUE(open(p.server, gen0[i], p.t0 + seconds(1)).isOk()) << i;
  for (int i = 25; i < 50; ++i) ASSERT_TRUE(open(p.server, gen1[i], p.t0 + seconds(1)).isOk()) << i;
  // Replays are refused in both generations.
  EXPECT_FALSE(open(p.server, gen0[3], p.t0 + seconds(1)).isOk());
  EXPECT_FALSE(open(p.server, gen1[3], p.t0 + seconds(1)).isOk());
  // A third generation retires the first for good.
  for (int i = 0; i < 10; ++i) gen2.push_back(seal(p.client, message(20, static_cast<uint8_t>(i)), p.t0));
  EXPECT_EQ(p.client.sendGeneration(), 2u);
  ASSERT_TRUE(open(p.server, gen2[0], p.t0 + seconds(1)).isOk());
  auto late0 = seal(p.client, message(1, 0), p.t0);  // gen 2 still
  ASSERT_TRUE(open(p.server, late0, p.t0 + seconds(1)).isOk());
  auto retired = open(p.server, gen0[0], p.t0 + seconds(1));  // never opened before
  ASSERT_FALSE(retired.isOk());
  EXPECT_NE(retired.status().detail().find("key generation"), std::string::npos) << retired.status().detail();
}

TEST(SecureDataChannel, RekeyByTimeAndTheGraceEnds) {
  DataOptions o;
  o.rekeyAfterTime = seconds(60);
  o.previousKeyGrace = seconds(5);
  Pair p = makePair(o);
  auto old1 = seal(p.client, message(8, 1), p.t0);
  auto old2 = seal(p.client, message(8, 2), p.t0);
  auto fresh = seal(p.client, message(8, 3), p.t0 + seconds(61));
  EXPECT_EQ(p.client.sendGeneration(), 1u);
  ASSERT_TRUE(open(p.server, fresh, p.t0 + seconds(61)).isOk());
  ASSERT_TRUE(open(p.server, old1, p.t0 + seconds(63)).isOk()) << "within the grace";
  auto tooLate = open(p.server, old2, p.t0 + seconds(67));
  ASSERT_FALSE(tooLate.isOk()) << "after the grace";
  EXPECT_EQ(tooLate.status().code(), Errc::kBadFrame);
}

TEST(SecureDataChannel, ForgedNextGenerationDoesNotRotateTheReceiver) {
  Pair p = makePair();
  auto d = seal(p.client, message(8, 1), p.t0);
  auto forged = d;
  forged[3] = 1;  // claims the next generation, but was sealed under generation 0
  EXPECT_EQ(open(p.server, forged, p.t0).status().code(), Errc::kBadFrame);
  EXPECT_EQ(p.server.receiveGeneration(), 0u);
  EXPECT_TRUE(open(p.server, d, p.t0).isOk());
  auto skip = d;
  skip[3] = 7;
  EXPECT_EQ(open(p.server, skip, p.t0).status().code(), Errc::kBadFrame);
}

TEST(SecureDataChannel, NonceExhaustionIsRefusedNotWrapped) {
  DataOptions o;
  o.rekeyAfterMessages = std::numeric_limits<uint64_t>::max();  // never rekey by count
  Pair p = makePair(o);
  const uint64_t top = std::numeric_limits<uint64_t>::max();
  p.client.setSendCounterForTest(top - 2);
  auto a = seal(p.client, message(8, 1), p.t0);
  auto b = seal(p.client, message(8, 2), p.t0);
  ASSERT_EQ(a.size(), 8 + DataChannel::kOverhead);
  ASSERT_EQ(b.size(), 8 + DataChannel::kOverhead);
  std::vector<uint8_t> out(64);
  auto c = p.client.seal(message(8, 3), out, p.t0);
  ASSERT_FALSE(c.isOk());
  EXPECT_EQ(c.status().code(), Errc::kResourceExhausted);
  // The receiver takes the last two counters (near 2^64) and refuses the reserved one.
  ASSERT_TRUE(open(p.server, b, p.t0).isOk());
  ASSERT_TRUE(open(p.server, a, p.t0).isOk());
  auto reserved = b;
  uint64_t r = top;
  std::memcpy(reserved.data() + data::kCounter, &r, 8);
  EXPECT_EQ(open(p.server, reserved, p.t0).status().code(), Errc::kBadFrame);
}

TEST(SecureDataChannel, RekeyAvoidsExhaustionByDefault) {
  DataOptions o;
  o.rekeyAfterMessages = 4;
  Pair p = makePair(o);
  p.client.setSendCounterForTest(3);
  auto a = seal(p.client, message(8, 1), p.t0);  // counter 3, generation 0
  auto b = seal(p.client, message(8, 2), p.t0);  // counter 0, generation 1
  EXPECT_EQ(a[3], 0u);
  EXPECT_EQ(b[3], 1u);
  EXPECT_TRUE(open(p.server, a, p.t0).isOk());
  EXPECT_TRUE(open(p.server, b, p.t0).isOk());
}

TEST(SecureDataChannel, OutputTooSmallIsAnErrorNotAnOverflow) {
  Pair p = makePair();
  auto plain = message(100, 1);
  std::vector<uint8_t> small(100 + DataChannel::kOverhead - 1);
  EXPECT_EQ(p.client.seal(plain, small, p.t0).status().code(), Errc::kInvalidArgument);
  auto d = seal(p.client, plain, p.t0);
  std::vector<uint8_t> out(99);
  EXPECT_EQ(p.server.open(d, out, p.t0).status().code(), Errc::kInvalidArgument);
  EXPECT_EQ(DataChannel::receiverOf(d).value(), *DataChannel::receiverOf(d));
  EXPECT_FALSE(DataChannel::receiverOf(Bytes(d.data(), 31)).has_value());
}

}  // namespace
}  // namespace lrpc::secure
