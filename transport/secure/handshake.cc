#include "transport/secure/handshake.h"

#include <time.h>

#include <cstring>
#include <string_view>

#include "transport/secure/messages.h"

namespace lrpc::secure {
namespace {

constexpr std::string_view kPrologue = "lrpc secure v1";
constexpr std::string_view kMac1Label = "mac1----";
constexpr std::string_view kCookieLabel = "cookie--";
constexpr size_t kTimestampBytes = 12;
// A cookie is valid for at least the responder's lifetime (default 120 s) after it was minted.
constexpr std::chrono::seconds kCookieUseFor{120};

Bytes text(std::string_view s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

Hash labelledKey(std::string_view label, const PublicKey& key) { return sha256({text(label), key.bytes}); }

std::array<uint8_t, kMacBytes> mac(const Hash& key, Bytes covered) {
  Hash full = hmacSha256(key, {covered});
  std::array<uint8_t, kMacBytes> m{};
  std::memcpy(m.data(), full.data(), m.size());
  return m;
}

// The prologue binds the hello's clear header (magic, type, version, initiator index) into
// the handshake hash, so the AEAD tags of both messages cover it.
SymmetricState startHandshake(const PublicKey& responderStatic, Bytes helloHeader) {
  SymmetricState s(kProtocolName);
  s.mixHash(text(kPrologue));
  s.mixHash(helloHeader);
  s.mixHash(responderStatic.bytes);  // the pre-message "<- s"
  return s;
}

std::array<uint8_t, kTimestampBytes> encodeTimestamp(const Timestamp& t) {
  std::array<uint8_t, kTimestampBytes> b{};
  for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(t.seconds >> (56 - 8 * i));
  for (int i = 0; i < 4; ++i) b[8 + i] = static_cast<uint8_t>(t.nanos >> (24 - 8 * i));
  return b;
}

Timestamp decodeTimestamp(const std::array<uint8_t, kTimestampBytes>& b) {
  Timestamp t;
  for (int i = 0; i < 8; ++i) t.seconds = (t.seconds << 8) | b[i];
  for (int i = 0; i < 4; ++i) t.nanos = (t.nanos << 8) | b[8 + i];
  return t;
}

Result<uint32_t> randomIndex(const std::function<bool(uint32_t)>& inUse) {
  for (int attempt = 0; attempt < 64; ++attempt) {
    uint32_t i = 0;
    if (Status s = randomBytes({reinterpret_cast<uint8_t*>(&i), sizeof i}); !s.isOk()) return s;
    if (i != 0 && (!inUse || !inUse(i))) return i;
  }
  return Status(Errc::kResourceExhausted, "no free session index");
}

bool validPrefix(Bytes m, MessageType type, size_t size) {
  return m.size() == size && peekType(m.data(), m.size()) == static_cast<uint8_t>(type) && m[3] == kVersion;
}

}  // namespace

Timestamp Timestamp::now() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return Timestamp{(uint64_t{1} << 62) + static_cast<uint64_t>(ts.tv_sec), static_cast<uint32_t>(ts.tv_nsec)};
}

// ---------------------------------------------------------------- initiator

Result<Initiator> Initiator::create(const KeyPair& self, const PublicKey& responder,
                                    std::optional<PresharedKey> psk) {
  Initiator i(self, responder);
  if (psk) i.psk_ = *psk;
  i.mac1Key_ = labelledKey(kMac1Label, responder);
  i.replyMac1Key_ = labelledKey(kMac1Label, self.publicKey());
  i.cookieKey_ = labelledKey(kCookieLabel, responder);
  return i;
}

Result<std::vector<uint8_t>> Initiator::writeHello(Timestamp now, Instant clock) {
  auto eph = KeyPair::generate();
  if (!eph) return eph.status();
  auto index = randomIndex(nullptr);
  if (!index) return index.status();
  // Strictly later than the last hello, even within one clock tick or after the clock stepped back.
  if (!(lastTimestamp_ < now)) {
    now = lastTimestamp_;
    if (++now.nanos >= 1000000000u) {
      now.nanos = 0;
      ++now.seconds;
    }
  }

  std::vector<uint8_t> m(hello::kBytes, 0);
  putPrefix(m.data(), MessageType::kHello, kVersion);
  putU32(m.data() + hello::kSender, *index);
  SymmetricState s = startHandshake(responder_, Bytes(m.data(), hello::kEphemeral));

  // -> e
  std::memcpy(m.data() + hello::kEphemeral, eph->publicKey().bytes.data(), kKeyBytes);
  s.mixHash(eph->publicKey().bytes);
  s.mixKey(eph->publicKey().bytes);  // psk modifier: "e" also mixes the key
  // -> es
  auto es = eph->dh(responder_.bytes);
  if (!es) return es.status();
  s.mixKey(*es);
  wipe(*es);
  // -> s
  if (Status st = s.encryptAndHash(self_.publicKey().bytes, MutableBytes(m.data() + hello::kStatic, kKeyBytes + kTagBytes));
      !st.isOk())
    return st;
  // -> ss
  auto ss = self_.dh(responder_.bytes);
  if (!ss) return ss.status();
  s.mixKey(*ss);
  wipe(*ss);
  // payload: the timestamp
  auto ts = encodeTimestamp(now);
  if (Status st = s.encryptAndHash(ts, MutableBytes(m.data() + hello::kTimestamp, kTimestampBytes + kTagBytes));
      !st.isOk())
    return st;

  lastMac1_ = mac(mac1Key_, Bytes(m.data(), hello::kMac1));
  std::memcpy(m.data() + hello::kMac1, lastMac1_.data(), kMacBytes);
  // A stale cookie costs one more cookie reply, never a refusal, so its age is only a guess.
  if (cookie_ && clock - cookieReceived_ < kCookieUseFor) {
    Hash full = hmacSha256(*cookie_, {Bytes(m.data(), hello::kMac2)});
    std::memcpy(m.data() + hello::kMac2, full.data(), kMacBytes);
  }

  state_.emplace(s);
  ephemeral_ = *eph;
  index_ = *index;
  lastTimestamp_ = now;
  return m;
}

Status Initiator::readCookieReply(Bytes m, Instant clock) {
  if (!validPrefix(m, MessageType::kCookieReply, cookie_reply::kBytes))
    return Status(Errc::kBadFrame, "not a cookie reply");
  if (!state_ || getU32(m.data() + cookie_reply::kReceiver) != index_)
    return Status(Errc::kBadFrame, "cookie reply for no hello of ours");
  std::array<uint8_t, kNonceBytes> nonce{};
  std::memcpy(nonce.data(), m.data() + cookie_reply::kNonce, nonce.size());
  Cookie c{};
  Key key{};
  std::memcpy(key.data(), cookieKey_.data(), key.size());
  if (Status s = aeadOpen(key, nonce, lastMac1_, m.subspan(cookie_reply::kCookie), c); !s.isOk())
    return Status(Errc::kBadFrame, "cookie reply: " + s.detail());
  cookie_ = c;
  cookieReceived_ = clock;
  return {};
}

Result<TransportKeys> Initiator::readReply(Bytes m) {
  if (!validPrefix(m, MessageType::kReply, reply::kBytes)) return Status(Errc::kBadFrame, "not a handshake reply");
  if (!state_ || !ephemeral_ || getU32(m.data() + reply::kReceiver) != index_)
    return Status(Errc::kBadFrame, "reply for no hello of ours");
  if (!equalConstantTime(mac(replyMac1Key_, m.first(reply::kMac1)), m.subspan(reply::kMac1, kMacBytes)))
    return Status(Errc::kBadFrame, "reply: bad mac1");
  SymmetricState s = *state_;  // a forged reply must not spoil the state for the real one

  Key re{};
  std::memcpy(re.data(), m.data() + reply::kEphemeral, kKeyBytes);
  // <- e
  s.mixHash(re);
  s.mixKey(re);
  // <- ee
  auto ee = ephemeral_->dh(re);
  if (!ee) return ee.status();
  s.mixKey(*ee);
  wipe(*ee);
  // <- se
  auto se = self_.dh(re);
  if (!se) return se.status();
  s.mixKey(*se);
  wipe(*se);
  // <- psk
  s.mixKeyAndHash(psk_.bytes);
  // payload: the responder's index
  uint8_t payload[4];
  if (Status st = s.decryptAndHash(m.subspan(reply::kPayload, 4 + kTagBytes), payload); !st.isOk())
    return Status(Errc::kBadFrame, "reply: " + st.detail() + " (wrong server key or pre-shared key?)");

  TransportKeys keys;
  s.split(&keys.send, &keys.receive);
  keys.localIndex = index_;
  keys.remoteIndex = getU32(payload);
  keys.handshakeHash = s.handshakeHash();
  state_.reset();  // one reply completes one hello: a replayed reply finds nothing
  ephemeral_.reset();
  return keys;
}

// ---------------------------------------------------------------- responder

size_t Responder::KeyHash::operator()(const PublicKey& k) const noexcept {
  size_t h;
  std::memcpy(&h, k.bytes.data(), sizeof h);
  return h;
}

Result<Responder> Responder::create(const KeyPair& self, ResponderOptions options, Instant now) {
  if (options.allowedClients.empty() && !options.anyClient)
    return Status(Errc::kInvalidArgument, "responder: list the allowed client keys, or say anyClient");
  if (options.maxTrackedClients == 0) return Status(Errc::kInvalidArgument, "responder: maxTrackedClients is 0");
  auto jar = CookieJar::create(options.cookieLifetime, now);
  if (!jar) return jar.status();
  auto limiter = RateLimiter::create(options.rate);
  if (!limiter) return limiter.status();
  return Responder(self, std::move(options), std::move(*jar), std::move(*limiter));
}

Responder::Responder(const KeyPair& self, ResponderOptions options, CookieJar jar, RateLimiter limiter)
    : self_(self), options_(std::move(options)), cookies_(std::move(jar)), limiter_(std::move(limiter)) {
  mac1Key_ = labelledKey(kMac1Label, self_.publicKey());
  cookieKey_ = labelledKey(kCookieLabel, self_.publicKey());
}

void Responder::prepare() noexcept {
  if (nextEphemeral_) return;
  auto made = KeyPair::generate();
  if (made) nextEphemeral_.emplace(*made);  // on failure readHello tries again itself
}

bool Responder::underLoad(Instant now) {
  if (now - loadSecond_ >= std::chrono::seconds(1)) {
    loadSecond_ = now;
    hellosThisSecond_ = 0;
  }
  ++hellosThisSecond_;
  return hellosThisSecond_ > options_.cookieAboveHellosPerSecond;
}

bool Responder::allowed(const PublicKey& client) const {
  if (options_.anyClient) return true;
  for (const PublicKey& k : options_.allowedClients)
    if (equalConstantTime(k.bytes, client.bytes)) return true;
  return false;
}

Result<HelloOutcome> Responder::cookieReply(Bytes m, Bytes source, Instant now) {
  auto cookie = cookies_.mint(source, now);
  if (!cookie) return cookie.status();
  HelloOutcome out;
  out.reply.assign(cookie_reply::kBytes, 0);
  uint8_t* r = out.reply.data();
  putPrefix(r, MessageType::kCookieReply, kVersion);
  std::memcpy(r + cookie_reply::kReceiver, m.data() + hello::kSender, 4);
  std::array<uint8_t, kNonceBytes> nonce{};
  if (Status s = randomBytes(nonce); !s.isOk()) return s;
  std::memcpy(r + cookie_reply::kNonce, nonce.data(), nonce.size());
  Key key{};
  std::memcpy(key.data(), cookieKey_.data(), key.size());
  // Bound to the hello's mac1, so a cookie reply cannot be replayed against another hello.
  if (Status s = aeadSeal(key, nonce, m.subspan(hello::kMac1, kMacBytes), *cookie,
                          MutableBytes(r + cookie_reply::kCookie, kCookieBytes + kTagBytes));
      !s.isOk())
    return s;
  return out;
}

Result<HelloOutcome> Responder::readHello(Bytes m, Bytes source, Instant now) {
  if (!validPrefix(m, MessageType::kHello, hello::kBytes)) return Status(Errc::kBadFrame, "not a hello");
  // mac1 first: one HMAC turns away every hello not made with our public key, before any DH.
  if (!equalConstantTime(mac(mac1Key_, m.first(hello::kMac1)), m.subspan(hello::kMac1, kMacBytes)))
    return Status(Errc::kBadFrame, "hello: bad mac1 (not made for this server's key)");
  const bool loaded = underLoad(now);
  // A hello that carries a cookie MAC has it checked, load or not, so every byte of a hello
  // matters; a missing one matters only under load. Either failure earns a cookie reply
  // (smaller than the hello: no amplification) and keeps nothing.
  static constexpr std::array<uint8_t, kMacBytes> kNoMac{};
  Bytes mac2 = m.subspan(hello::kMac2, kMacBytes);
  const bool hasMac2 = !equalConstantTime(mac2, kNoMac);
  if (hasMac2 ? !cookies_.validMac(m.first(hello::kMac2), mac2, source, now) : loaded)
    return cookieReply(m, source, now);
  if (!limiter_.allow(source, now)) return Status(Errc::kResourceExhausted, "hello: rate limited");

  SymmetricState s = startHandshake(self_.publicKey(), m.first(hello::kEphemeral));
  Key ie{};
  std::memcpy(ie.data(), m.data() + hello::kEphemeral, kKeyBytes);
  // -> e
  s.mixHash(ie);
  s.mixKey(ie);
  // -> es
  auto es = self_.dh(ie);
  if (!es) return es.status();
  s.mixKey(*es);
  wipe(*es);
  // -> s
  PublicKey client;
  if (Status st = s.decryptAndHash(m.subspan(hello::kStatic, kKeyBytes + kTagBytes), client.bytes); !st.isOk())
    return Status(Errc::kBadFrame, "hello: " + st.detail());
  if (!allowed(client)) return Status(Errc::kPermissionDenied, "hello: client key " + client.toText() + " is not allowed");
  // -> ss
  auto ss = self_.dh(client.bytes);
  if (!ss) return ss.status();
  s.mixKey(*ss);
  wipe(*ss);
  // payload: the timestamp
  std::array<uint8_t, kTimestampBytes> tsBytes{};
  if (Status st = s.decryptAndHash(m.subspan(hello::kTimestamp, kTimestampBytes + kTagBytes), tsBytes); !st.isOk())
    return Status(Errc::kBadFrame, "hello: " + st.detail());
  const Timestamp ts = decodeTimestamp(tsBytes);
  auto last = lastHello_.find(client);
  if (last != lastHello_.end() && !(last->second < ts))
    return Status(Errc::kBadFrame, "hello: replayed (timestamp not later than the last accepted)");

  // <- e, ee, se, psk and the reply; an ephemeral prepared ahead is taken (used once).
  std::optional<KeyPair> eph = std::move(nextEphemeral_);
  nextEphemeral_.reset();
  if (!eph) {
    auto made = KeyPair::generate();
    if (!made) return made.status();
    eph.emplace(*made);
  }
  auto index = randomIndex(options_.indexInUse);
  if (!index) return index.status();
  HelloOutcome out;
  out.reply.assign(reply::kBytes, 0);
  uint8_t* r = out.reply.data();
  putPrefix(r, MessageType::kReply, kVersion);
  std::memcpy(r + reply::kReceiver, m.data() + hello::kSender, 4);
  std::memcpy(r + reply::kEphemeral, eph->publicKey().bytes.data(), kKeyBytes);
  s.mixHash(eph->publicKey().bytes);
  s.mixKey(eph->publicKey().bytes);
  auto ee = eph->dh(ie);
  if (!ee) return ee.status();
  s.mixKey(*ee);
  wipe(*ee);
  auto se = eph->dh(client.bytes);
  if (!se) return se.status();
  s.mixKey(*se);
  wipe(*se);
  static const PresharedKey kNoPsk;
  s.mixKeyAndHash(options_.psk ? options_.psk->bytes : kNoPsk.bytes);
  uint8_t payload[4];
  putU32(payload, *index);
  if (Status st = s.encryptAndHash(payload, MutableBytes(r + reply::kPayload, 4 + kTagBytes)); !st.isOk()) return st;
  auto replyMac1 = mac(labelledKey(kMac1Label, client), Bytes(r, reply::kMac1));
  std::memcpy(r + reply::kMac1, replyMac1.data(), kMacBytes);

  // Only a hello that authenticated in full moves the client's replay mark.
  if (last != lastHello_.end()) {
    last->second = ts;
  } else {
    if (lastHello_.size() >= options_.maxTrackedClients) {
      lastHello_.erase(helloOrder_.front());
      helloOrder_.pop_front();
    }
    lastHello_.emplace(client, ts);
    helloOrder_.push_back(client);
  }
  // Split: the initiator's sending key is our receiving key.
  s.split(&out.keys.receive, &out.keys.send);
  out.keys.localIndex = *index;
  out.keys.remoteIndex = getU32(m.data() + hello::kSender);
  out.keys.handshakeHash = s.handshakeHash();
  out.accepted = true;
  out.client = client;
  return out;
}

}  // namespace lrpc::secure
