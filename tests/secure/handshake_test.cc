// The Noise_IKpsk2 handshake: success, every way it must refuse, cookies and rate limits.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "transport/secure/handshake.h"
#include "transport/secure/messages.h"

namespace lrpc::secure {
namespace {

using std::chrono::seconds;

const std::vector<uint8_t> kSourceA = {127, 0, 0, 1, 0x1f, 0x40};
const std::vector<uint8_t> kSourceB = {127, 0, 0, 2, 0x1f, 0x40};

KeyPair newPair() {
  auto p = KeyPair::generate();
  EXPECT_TRUE(p.isOk());
  return *p;
}

struct Parties {
  KeyPair server = newPair();
  KeyPair client = newPair();
  ResponderOptions options() const {
    ResponderOptions o;
    o.allowedClients = {client.publicKey()};
    return o;
  }
};

// The usual two sides of a handshake: a responder that allows the client, and the client's
// initiator aimed at the server's key.
struct Sides : Parties {
  Result<Responder> responder = Responder::create(server, options());
  Result<Initiator> initiator = Initiator::create(client, server.publicKey());
  bool made() const { return responder.isOk() && initiator.isOk(); }
};

void expectSameKeys(const TransportKeys& i, const TransportKeys& r) {
  EXPECT_EQ(i.send, r.receive);
  EXPECT_EQ(i.receive, r.send);
  EXPECT_NE(i.send, i.receive);
  EXPECT_EQ(i.handshakeHash, r.handshakeHash);
  EXPECT_EQ(i.localIndex, r.remoteIndex);
  EXPECT_EQ(i.remoteIndex, r.localIndex);
}

TEST(SecureHandshake, CompletesWithMatchingTransportKeys) {
  Sides p;
  ASSERT_TRUE(p.made());
  auto hello = p.initiator->writeHello();
  ASSERT_TRUE(hello.isOk()) << hello.status().toString();
  EXPECT_EQ(hello->size(), hello::kBytes);
  auto outcome = p.responder->readHello(*hello, kSourceA);
  ASSERT_TRUE(outcome.isOk()) << outcome.status().toString();
  ASSERT_TRUE(outcome->accepted);
  EXPECT_EQ(outcome->client, p.client.publicKey());
  EXPECT_EQ(outcome->reply.size(), reply::kBytes);
  auto keys = p.initiator->readReply(outcome->reply);
  ASSERT_TRUE(keys.isOk()) << keys.status().toString();
  expectSameKeys(*keys, outcome->keys);
  // A replayed reply finds no handshake in progress.
  EXPECT_EQ(p.initiator->readReply(outcome->reply).status().code(), Errc::kBadFrame);
}

TEST(SecureHandshake, EachHandshakeHasFreshKeys) {
  Sides p;
  ASSERT_TRUE(p.made());
  std::vector<Key> seen;
  for (int i = 0; i < 3; ++i) {
    auto hello = p.initiator->writeHello();
    ASSERT_TRUE(hello.isOk());
    auto outcome = p.responder->readHello(*hello, kSourceA);
    ASSERT_TRUE(outcome.isOk() && outcome->accepted) << outcome.status().toString();
    auto keys = p.initiator->readReply(outcome->reply);
    ASSERT_TRUE(keys.isOk());
    for (const Key& k : seen) EXPECT_NE(k, keys->send);
    seen.push_back(keys->send);
  }
}

// The responder's ephemeral key made ahead (prepare(), as the endpoint does after each reply)
// is used by one handshake only, prepared or not: every reply carries another one, and every
// handshake ends in other keys.
TEST(SecureHandshake, PreparedEphemeralKeysAreUsedOnce) {
  Sides p;
  ASSERT_TRUE(p.made());
  std::vector<std::vector<uint8_t>> ephemerals;
  std::vector<Key> seen;
  for (int i = 0; i < 4; ++i) {
    if (i % 2 == 0) p.responder->prepare();
    if (i == 0) p.responder->prepare();  // twice in a row: still one key, used once
    auto hello = p.initiator->writeHello();
    ASSERT_TRUE(hello.isOk());
    auto outcome = p.responder->readHello(*hello, kSourceA);
    ASSERT_TRUE(outcome.isOk() && outcome->accepted) << outcome.status().toString();
    const auto* e = outcome->reply.data() + reply::kEphemeral;
    std::vector<uint8_t> ephemeral(e, e + kKeyBytes);
    for (const auto& other : ephemerals) EXPECT_NE(other, ephemeral) << "handshake " << i;
    ephemerals.push_back(ephemeral);
    auto keys = p.initiator->readReply(outcome->reply);
    ASSERT_TRUE(keys.isOk()) << keys.status().toString();
    for (const Key& k : seen) EXPECT_NE(k, keys->send);
    seen.push_back(keys->send);
  }
}

TEST(SecureHandshake, WithPresharedKeyOnBothSides) {
  Parties p;
  auto psk = PresharedKey::generate();
  ASSERT_TRUE(psk.isOk());
  ResponderOptions o = p.options();
  o.psk = *psk;
  auto responder = Responder::create(p.server, o);
  auto initiator = Initiator::create(p.client, p.server.publicKey(), *psk);
  ASSERT_TRUE(responder.isOk() && initiator.isOk());
  auto hello = initiator->writeHello();
  ASSERT_TRUE(hello.isOk());
  auto outcome = responder->readHello(*hello, kSourceA);
  ASSERT_TRUE(outcome.isOk() && outcome->accepted);
  auto keys = initiator->readReply(outcome->reply);
  ASSERT_TRUE(keys.isOk()) << keys.status().toString();
  expectSameKeys(*keys, outcome->keys);
}

TEST(SecureHandshake, MismatchedPresharedKeyFailsAtTheInitiator) {
  Parties p;
  auto psk = PresharedKey::generate();
  auto other = PresharedKey::generate();
  ASSERT_TRUE(psk.isOk() && other.isOk());
  ResponderOptions o = p.options();
  o.psk = *psk;
  auto responder = Responder::create(p.server, o);
  ASSERT_TRUE(responder.isOk());
  for (std::optional<PresharedKey> clientPsk : {std::optional<PresharedKey>(*other), std::optional<PresharedKey>()}) {
    auto initiator = Initiator::create(p.client, p.server.publicKey(), clientPsk);
    ASSERT_TRUE(initiator.isOk());
    auto hello = initiator->writeHello();
    ASSERT_TRUE(hello.isOk());
    auto outcome = responder->readHello(*hello, kSourceA);
    ASSERT_TRUE(outcome.isOk() && outcome->accepted);  // psk2 is mixed in only by the reply
    auto keys = initiator->readReply(outcome->reply);
    ASSERT_FALSE(keys.isOk());
    EXPECT_EQ(keys.status().code(), Errc::kBadFrame);
  }
}

TEST(SecureHandshake, WrongServerKeyIsRefused) {
  Parties p;
  KeyPair impostor = newPair();
  // The client pinned the real server's key; an impostor with its own key cannot answer.
  ResponderOptions o = p.options();
  auto fake = Responder::create(impostor, o);
  auto initiator = Initiator::create(p.client, p.server.publicKey());
  ASSERT_TRUE(fake.isOk() && initiator.isOk());
  auto hello = initiator->writeHello();
  ASSERT_TRUE(hello.isOk());
  auto outcome = fake->readHello(*hello, kSourceA);
  ASSERT_FALSE(outcome.isOk());
  EXPECT_EQ(outcome.status().code(), Errc::kBadFrame);
  EXPECT_NE(outcome.status().detail().find("mac1"), std::string::npos) << outcome.status().detail();

  // Nor can a real server answer a client that pinned some other key.
  auto real = Responder::create(p.server, o);
  auto confused = Initiator::create(p.client, impostor.publicKey());
  ASSERT_TRUE(real.isOk() && confused.isOk());
  auto hello2 = confused->writeHello();
  ASSERT_TRUE(hello2.isOk());
  EXPECT_EQ(real->readHello(*hello2, kSourceA).status().code(), Errc::kBadFrame);
}

TEST(SecureHandshake, ImpostorServerWithForgedReplyIsRefused) {
  // The impostor sees the hello and answers with a reply built under its own key for the
  // client: the client's check of the reply fails (se needs the real server's ephemeral and
  // the chain needs es/ss with the real static key).
  Parties p;
  KeyPair impostor = newPair();
  ResponderOptions o;
  o.anyClient = true;
  auto fakeResponder = Responder::create(impostor, o);
  auto initiator = Initiator::create(p.client, p.server.publicKey());
  auto toImpostor = Initiator::create(p.client, impostor.publicKey());
  ASSERT_TRUE(fakeResponder.isOk() && initiator.isOk() && toImpostor.isOk());
  auto hello = initiator->writeHello();
  auto fakeHello = toImpostor->writeHello();
  ASSERT_TRUE(hello.isOk() && fakeHello.isOk());
  auto fakeOutcome = fakeResponder->readHello(*fakeHello, kSourceA);
  ASSERT_TRUE(fakeOutcome.isOk() && fakeOutcome->accepted);
  std::vector<uint8_t> forged = fakeOutcome->reply;
  putU32(forged.data() + reply::kReceiver, initiator->index());
  auto keys = initiator->readReply(forged);
  ASSERT_FALSE(keys.isOk());
  EXPECT_EQ(keys.status().code(), Errc::kBadFrame);
}

TEST(SecureHandshake, UnknownClientKeyIsRefused) {
  Parties p;
  KeyPair stranger = newPair();
  auto responder = Responder::create(p.server, p.options());
  auto initiator = Initiator::create(stranger, p.server.publicKey());
  ASSERT_TRUE(responder.isOk() && initiator.isOk());
  auto hello = initiator->writeHello();
  ASSERT_TRUE(hello.isOk());
  auto outcome = responder->readHello(*hello, kSourceA);
  ASSERT_FALSE(outcome.isOk());
  EXPECT_EQ(outcome.status().code(), Errc::kPermissionDenied);
  EXPECT_NE(outcome.status().detail().find(stranger.publicKey().toText()), std::string::npos);
}

TEST(SecureHandshake, AnyClientMustBeSaidExplicitly) {
  Parties p;
  EXPECT_EQ(Responder::create(p.server, ResponderOptions{}).status().code(), Errc::kInvalidArgument);
  ResponderOptions o;
  o.anyClient = true;
  auto responder = Responder::create(p.server, o);
  auto initiator = Initiator::create(newPair(), p.server.publicKey());
  ASSERT_TRUE(responder.isOk() && initiator.isOk());
  auto hello = initiator->writeHello();
  ASSERT_TRUE(hello.isOk());
  auto outcome = responder->readHello(*hello, kSourceA);
  ASSERT_TRUE(outcome.isOk() && outcome->accepted) << outcome.status().toString();
}

TEST(SecureHandshake, ReplayedHelloIsRefused) {
  Sides p;
  ASSERT_TRUE(p.made());
  auto first = p.initiator->writeHello();
  auto second = p.initiator->writeHello();
  ASSERT_TRUE(first.isOk() && second.isOk());
  ASSERT_TRUE(p.responder->readHello(*first, kSourceA).isOk());
  auto again = p.responder->readHello(*first, kSourceA);
  ASSERT_FALSE(again.isOk());
  EXPECT_EQ(again.status().code(), Errc::kBadFrame);
  EXPECT_NE(again.status().detail().find("replayed"), std::string::npos);
  // The later hello is still good; then the earlier one is older still.
  EXPECT_TRUE(p.responder->readHello(*second, kSourceA).isOk());
  EXPECT_FALSE(p.responder->readHello(*first, kSourceA).isOk());
  EXPECT_FALSE(p.responder->readHello(*second, kSourceA).isOk());
}

TEST(SecureHandshake, TimestampsStayIncreasingWhenTheClockDoesNot) {
  Sides p;
  ASSERT_TRUE(p.made());
  const Timestamp fixed{(uint64_t{1} << 62) + 1000, 999999999};
  for (int i = 0; i < 3; ++i) {
    auto hello = p.initiator->writeHello(fixed);
    ASSERT_TRUE(hello.isOk());
    auto outcome = p.responder->readHello(*hello, kSourceA);
    ASSERT_TRUE(outcome.isOk()) << i << ": " << outcome.status().toString();
  }
}

TEST(SecureHandshake, EveryTamperedHelloByteIsRefused) {
  Sides p;
  ASSERT_TRUE(p.made());
  auto hello = p.initiator->writeHello();
  ASSERT_TRUE(hello.isOk());
  for (size_t i = 0; i < hello->size(); ++i) {
    for (uint8_t flip : {uint8_t{0x01}, uint8_t{0x80}}) {
      std::vector<uint8_t> bad = *hello;
      bad[i] ^= flip;
      auto outcome = p.responder->readHello(bad, kSourceA);
      // Refused, or (a changed cookie MAC) answered with a cookie reply: never accepted.
      EXPECT_TRUE(!outcome.isOk() || !outcome->accepted) << "byte " << i;
    }
  }
  // The untouched hello still completes: nothing above moved the replay mark.
  auto outcome = p.responder->readHello(*hello, kSourceA);
  ASSERT_TRUE(outcome.isOk() && outcome->accepted) << outcome.status().toString();
}

TEST(SecureHandshake, EveryTamperedReplyByteIsRefused) {
  Sides p;
  ASSERT_TRUE(p.made());
  auto hello = p.initiator->writeHello();
  ASSERT_TRUE(hello.isOk());
  auto outcome = p.responder->readHello(*hello, kSourceA);
  ASSERT_TRUE(outcome.isOk() && outcome->accepted);
  for (size_t i = 0; i < outcome->reply.size(); ++i) {
    std::vector<uint8_t> bad = outcome->reply;
    bad[i] ^= 0x01;
    auto keys = p.initiator->readReply(bad);
    EXPECT_FALSE(keys.isOk()) << "byte " << i;
  }
  // A forged reply does not spoil the handshake for the real one.
  auto keys = p.initiator->readReply(outcome->reply);
  ASSERT_TRUE(keys.isOk()) << keys.status().toString();
  expectSameKeys(*keys, outcome->keys);
}

TEST(SecureHandshake, TruncatedAndPaddedMessagesAreRefused) {
  Sides p;
  ASSERT_TRUE(p.made());
  auto hello = p.initiator->writeHello();
  ASSERT_TRUE(hello.isOk());
  for (size_t n : {size_t{0}, size_t{3}, hello::kBytes - 1}) {
    EXPECT_EQ(p.responder->readHello(Bytes(hello->data(), n), kSourceA).status().code(), Errc::kBadFrame);
  }
  std::vector<uint8_t> longer = *hello;
  longer.push_back(0);
  EXPECT_EQ(p.responder->readHello(longer, kSourceA).status().code(), Errc::kBadFrame);
  auto outcome = p.responder->readHello(*hello, kSourceA);
  ASSERT_TRUE(outcome.isOk());
  EXPECT_EQ(p.initiator->readReply(Bytes(outcome->reply.data(), reply::kBytes - 1)).status().code(), Errc::kBadFrame);
}

TEST(SecureHandshake, LowOrderEphemeralIsRefused) {
  // An all-zero "public key" is a low-order point: X25519 with it gives zero.
  Sides p;
  ASSERT_TRUE(p.made());
  auto hello = p.initiator->writeHello();
  ASSERT_TRUE(hello.isOk());
  std::vector<uint8_t> bad = *hello;
  std::fill(bad.begin() + hello::kEphemeral, bad.begin() + hello::kEphemeral + 32, 0);
  // Recompute mac1 as an attacker who knows the server's public key can.
  auto mac1Key = sha256({Bytes(reinterpret_cast<const uint8_t*>("mac1----"), 8), p.server.publicKey().bytes});
  Hash m = hmacSha256(mac1Key, {Bytes(bad.data(), hello::kMac1)});
  std::copy(m.begin(), m.begin() + kMacBytes, bad.begin() + hello::kMac1);
  auto outcome = p.responder->readHello(bad, kSourceA);
  ASSERT_FALSE(outcome.isOk());
  EXPECT_EQ(outcome.status().code(), Errc::kBadFrame);
}

// ---------------------------------------------------------------- cookies and rate limits

struct Loaded : Parties {
  Instant t0 = Clock::now();
  ResponderOptions loadedOptions(uint32_t threshold = 0) const {
    ResponderOptions o = options();
    o.cookieAboveHellosPerSecond = threshold;
    o.cookieLifetime = seconds(10);
    return o;
  }
};

// Under load from the first hello on: the initiator's first hello, from A, has earned a cookie
// reply and no session.
class CookieEarned : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(responder_.isOk() && initiator_.isOk());
    auto hello = initiator_->writeHello(Timestamp::now(), p_.t0);
    ASSERT_TRUE(hello.isOk());
    hello_ = std::move(*hello);
    auto outcome = responder_->readHello(hello_, kSourceA, p_.t0);
    ASSERT_TRUE(outcome.isOk()) << outcome.status().toString();
    ASSERT_FALSE(outcome->accepted);
    cookie_ = std::move(outcome->reply);
  }
  Loaded p_;
  Result<Responder> responder_ = Responder::create(p_.server, p_.loadedOptions(), p_.t0);
  Result<Initiator> initiator_ = Initiator::create(p_.client, p_.server.publicKey());
  std::vector<uint8_t> hello_, cookie_;
};

TEST_F(CookieEarned, ThenTheHelloCompletes) {
  ASSERT_EQ(cookie_.size(), cookie_reply::kBytes);
  EXPECT_EQ(cookie_[2], static_cast<uint8_t>(MessageType::kCookieReply));
  EXPECT_LT(cookie_.size(), hello_.size()) << "no amplification";

  ASSERT_TRUE(initiator_->readCookieReply(cookie_, p_.t0).isOk());
  auto withCookie = initiator_->writeHello(Timestamp::now(), p_.t0);
  ASSERT_TRUE(withCookie.isOk());
  auto second = responder_->readHello(*withCookie, kSourceA, p_.t0 + seconds(1));
  ASSERT_TRUE(second.isOk()) << second.status().toString();
  ASSERT_TRUE(second->accepted);
  auto keys = initiator_->readReply(second->reply);
  ASSERT_TRUE(keys.isOk()) << keys.status().toString();
  expectSameKeys(*keys, second->keys);
}

TEST(SecureCookie, LoadIsCountedPerSecond) {
  Loaded p;
  auto responder = Responder::create(p.server, p.loadedOptions(3), p.t0);
  auto initiator = Initiator::create(p.client, p.server.publicKey());
  ASSERT_TRUE(responder.isOk() && initiator.isOk());
  int accepted = 0, cookies = 0;
  for (int i = 0; i < 5; ++i) {
    auto hello = initiator->writeHello(Timestamp::now(), p.t0);
    ASSERT_TRUE(hello.isOk());
    // Distinct sources, so the per-source rate limit does not interfere.
    std::vector<uint8_t> source = {10, 0, 0, static_cast<uint8_t>(i)};
    auto outcome = responder->readHello(*hello, source, p.t0);
    ASSERT_TRUE(outcome.isOk()) << outcome.status().toString();
    (outcome->accepted ? accepted : cookies)++;
  }
  EXPECT_EQ(accepted, 3);
  EXPECT_EQ(cookies, 2);
  auto hello = initiator->writeHello(Timestamp::now(), p.t0);
  ASSERT_TRUE(hello.isOk());
  auto later = responder->readHello(*hello, kSourceA, p.t0 + seconds(2));
  ASSERT_TRUE(later.isOk());
  EXPECT_TRUE(later->accepted) << "a new second, no load";
}

TEST_F(CookieEarned, CookieFromAnotherAddressIsRefused) {
  ASSERT_TRUE(initiator_->readCookieReply(cookie_, p_.t0).isOk());
  auto withCookie = initiator_->writeHello(Timestamp::now(), p_.t0);
  ASSERT_TRUE(withCookie.isOk());
  // The same hello from B: B never received at A, so its cookie MAC is wrong for B.
  auto fromB = responder_->readHello(*withCookie, kSourceB, p_.t0);
  ASSERT_TRUE(fromB.isOk());
  EXPECT_FALSE(fromB->accepted);
  EXPECT_EQ(fromB->reply.size(), cookie_reply::kBytes);
  auto fromA = responder_->readHello(*withCookie, kSourceA, p_.t0);
  ASSERT_TRUE(fromA.isOk());
  EXPECT_TRUE(fromA->accepted);
}

TEST_F(CookieEarned, ExpiredCookieIsRefusedAndRenewed) {
  ASSERT_TRUE(initiator_->readCookieReply(cookie_, p_.t0).isOk());

  // Within one lifetime (10 s) and across one rotation the cookie holds ...
  auto h1 = initiator_->writeHello(Timestamp::now(), p_.t0);
  ASSERT_TRUE(h1.isOk());
  auto ok = responder_->readHello(*h1, kSourceA, p_.t0 + seconds(15));
  ASSERT_TRUE(ok.isOk());
  EXPECT_TRUE(ok->accepted);
  // ... two rotations later it is gone: the hello gets a new cookie reply, not a session.
  auto h2 = initiator_->writeHello(Timestamp::now(), p_.t0);
  ASSERT_TRUE(h2.isOk());
  auto expired = responder_->readHello(*h2, kSourceA, p_.t0 + seconds(26));
  ASSERT_TRUE(expired.isOk());
  EXPECT_FALSE(expired->accepted);
  ASSERT_EQ(expired->reply.size(), cookie_reply::kBytes);
  ASSERT_TRUE(initiator_->readCookieReply(expired->reply, p_.t0 + seconds(26)).isOk());
  auto h3 = initiator_->writeHello(Timestamp::now(), p_.t0 + seconds(26));
  ASSERT_TRUE(h3.isOk());
  auto renewed = responder_->readHello(*h3, kSourceA, p_.t0 + seconds(26));
  ASSERT_TRUE(renewed.isOk());
  EXPECT_TRUE(renewed->accepted);
}

TEST_F(CookieEarned, CookieReplyForAnotherHelloIsRefused) {
  for (size_t i = 0; i < cookie_.size(); ++i) {
    std::vector<uint8_t> bad = cookie_;
    bad[i] ^= 0x01;
    EXPECT_FALSE(initiator_->readCookieReply(bad, p_.t0).isOk()) << "byte " << i;
  }
  // After a new hello (new mac1), the old cookie reply no longer matches.
  ASSERT_TRUE(initiator_->writeHello(Timestamp::now(), p_.t0).isOk());
  std::vector<uint8_t> stale = cookie_;
  putU32(stale.data() + cookie_reply::kReceiver, initiator_->index());
  EXPECT_EQ(initiator_->readCookieReply(stale, p_.t0).code(), Errc::kBadFrame);
}

TEST(SecureCookie, CookieJarKeepsNoStatePerSource) {
  auto t0 = Clock::now();
  auto jar = CookieJar::create(seconds(10), t0);
  ASSERT_TRUE(jar.isOk());
  auto a = jar->mint(kSourceA, t0);
  ASSERT_TRUE(a.isOk());
  EXPECT_TRUE(jar->valid(*a, kSourceA, t0 + seconds(9)));
  EXPECT_FALSE(jar->valid(*a, kSourceB, t0));
  EXPECT_TRUE(jar->valid(*a, kSourceA, t0 + seconds(19)));   // previous secret
  EXPECT_FALSE(jar->valid(*a, kSourceA, t0 + seconds(30)));  // two rotations
  EXPECT_EQ(sizeof(CookieJar), sizeof(*jar)) << "fixed size, whatever the sources";
}

TEST(SecureRateLimit, EachSourceGetsABurstThenItsRate) {
  auto t0 = Clock::now();
  auto limiter = RateLimiter::create(RateLimiterOptions{10, 3, 64});
  ASSERT_TRUE(limiter.isOk());
  // A second source in another bucket (the bucket hash is keyed at random per limiter).
  std::vector<uint8_t> other = kSourceB;
  while (limiter->bucketOf(other) == limiter->bucketOf(kSourceA)) ++other[3];
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter->allow(kSourceA, t0)) << i;
  EXPECT_FALSE(limiter->allow(kSourceA, t0));
  EXPECT_TRUE(limiter->allow(other, t0)) << "another source has its own bucket";
  EXPECT_FALSE(limiter->allow(kSourceA, t0 + std::chrono::milliseconds(50)));
  EXPECT_TRUE(limiter->allow(kSourceA, t0 + std::chrono::milliseconds(110)));
  EXPECT_FALSE(limiter->allow(kSourceA, t0 + std::chrono::milliseconds(110)));
  EXPECT_FALSE(RateLimiter::create(RateLimiterOptions{10, 3, 0}).isOk());
}

TEST(SecureRateLimit, MemoryIsTheTableWhateverTheSources) {
  auto t0 = Clock::now();
  auto limiter = RateLimiter::create(RateLimiterOptions{1, 1, 8});
  ASSERT_TRUE(limiter.isOk());
  // 10,000 sources through 8 buckets: each bucket's one token goes to the first source that
  // lands in it, so at most 8 are allowed, and nothing grew.
  int allowed = 0;
  for (uint32_t i = 0; i < 10000; ++i) {
    std::vector<uint8_t> source = {static_cast<uint8_t>(i), static_cast<uint8_t>(i >> 8), 0, 1};
    allowed += limiter->allow(source, t0) ? 1 : 0;
  }
  EXPECT_LE(allowed, 8);
  EXPECT_GE(allowed, 1);
}

TEST(SecureRateLimit, ResponderRefusesAFloodFromOneSource) {
  Parties p;
  ResponderOptions o = p.options();
  o.rate = RateLimiterOptions{1, 2, 16};
  auto t0 = Clock::now();
  auto responder = Responder::create(p.server, o, t0);
  auto initiator = Initiator::create(p.client, p.server.publicKey());
  ASSERT_TRUE(responder.isOk() && initiator.isOk());
  int accepted = 0, limited = 0;
  for (int i = 0; i < 10; ++i) {
    auto hello = initiator->writeHello();
    ASSERT_TRUE(hello.isOk());
    auto outcome = responder->readHello(*hello, kSourceA, t0);
    if (outcome.isOk()) {
      ++accepted;
    } else {
      EXPECT_EQ(outcome.status().code(), Errc::kResourceExhausted);
      ++limited;
    }
  }
  EXPECT_EQ(accepted, 2);
  EXPECT_EQ(limited, 8);
  // A second later the source has earned one more handshake (1 per second), and only one.
  auto hello = initiator->writeHello();
  ASSERT_TRUE(hello.isOk());
  EXPECT_TRUE(responder->readHello(*hello, kSourceA, t0 + seconds(1)).isOk());
  auto again = initiator->writeHello();
  ASSERT_TRUE(again.isOk());
  EXPECT_EQ(responder->readHello(*again, kSourceA, t0 + seconds(1)).status().code(), Errc::kResourceExhausted);
}

TEST(SecureHandshake, ReplayMemoryIsBoundedForAnyClient) {
  Parties p;
  ResponderOptions o;
  o.anyClient = true;
  o.maxTrackedClients = 4;
  o.rate = RateLimiterOptions{1000, 1000, 16};
  auto responder = Responder::create(p.server, o);
  ASSERT_TRUE(responder.isOk());
  // Many distinct clients: each still completes, and the table never exceeds its bound
  // (observable as: the first client's replay mark was evicted, its old hello is fresh again).
  auto firstClient = Initiator::create(p.client, p.server.publicKey());
  ASSERT_TRUE(firstClient.isOk());
  auto firstHello = firstClient->writeHello();
  ASSERT_TRUE(firstHello.isOk());
  ASSERT_TRUE(responder->readHello(*firstHello, kSourceA).isOk());
  EXPECT_FALSE(responder->readHello(*firstHello, kSourceA).isOk());
  for (int i = 0; i < 8; ++i) {
    auto other = Initiator::create(newPair(), p.server.publicKey());
    ASSERT_TRUE(other.isOk());
    auto hello = other->writeHello();
    ASSERT_TRUE(hello.isOk());
    ASSERT_TRUE(responder->readHello(*hello, kSourceB).isOk());
  }
  EXPECT_TRUE(responder->readHello(*firstHello, kSourceA).isOk())
      << "evicted from the bounded table (a replayed hello yields no keys to the replayer)";
}

}  // namespace
}  // namespace lrpc::secure
