// The handshake: Noise_IKpsk2_25519_AESGCM_SHA256 (the pattern WireGuard uses), as pure state
// machines over byte buffers, with WireGuard's mac1/mac2 and cookie reply in front of it.
//
//   initiator                                   responder
//   writeHello()          -- hello (148 B) -->  readHello(): reply, or a cookie reply
//   readCookieReply() <-- cookie reply (52 B) -- (under load, no state kept)
//   writeHello() again    -- hello + mac2 -->   readHello(): reply + TransportKeys
//   readReply()  <-- reply (76 B) ------------
//   -> TransportKeys                            -> TransportKeys
//
// The initiator knows the responder's static public key beforehand; the responder learns
// the initiator's from the hello and checks it against its allow-list. Errors are values and
// every refusal says why; a transport drops the datagram silently on any error.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

#include "runtime/base/status.h"
#include "transport/secure/cookie.h"
#include "transport/secure/crypto.h"
#include "transport/secure/keys.h"
#include "transport/secure/messages.h"
#include "transport/secure/rate_limiter.h"
#include "transport/secure/symmetric_state.h"

namespace lrpc::secure {

inline constexpr char kProtocolName[] = "Noise_IKpsk2_25519_AESGCM_SHA256";

// TAI64N: seconds since 1970 plus 2^62, and nanoseconds; big-endian on the wire so that the
// bytes compare as the times do. Monotonic per initiator (see Initiator::writeHello).
struct Timestamp {
  uint64_t seconds = 0;
  uint32_t nanos = 0;
  static Timestamp now();
  friend auto operator<=>(const Timestamp&, const Timestamp&) = default;
};

// The result of a handshake, for DataChannel. Key material is wiped with the object.
struct TransportKeys {
  Key send{};
  Key receive{};
  uint32_t localIndex = 0;   // the index peers put in datagrams meant for us
  uint32_t remoteIndex = 0;  // the index we put in datagrams for the peer
  Hash handshakeHash{};      // Noise's h: a channel binding, equal on both sides
  TransportKeys() = default;
  TransportKeys(const TransportKeys&) = default;
  TransportKeys& operator=(const TransportKeys&) = default;
  ~TransportKeys() {
    wipe(send);
    wipe(receive);
  }
};

class Initiator {
 public:
  // `psk`: the same pre-shared key the responder has, or none on both sides.
  static Result<Initiator> create(const KeyPair& self, const PublicKey& responder,
                                  std::optional<PresharedKey> psk = std::nullopt);

  // A new hello: a fresh ephemeral key, a fresh index and a timestamp later than any this
  // initiator sent; carries mac2 when a cookie from readCookieReply() is still fresh.
  Result<std::vector<uint8_t>> writeHello(Timestamp now = Timestamp::now(), Instant clock = Clock::now());
  // Keeps the cookie for the next writeHello(); kBadFrame if it is not for our last hello.
  Status readCookieReply(Bytes message, Instant clock = Clock::now());
  // Completes the handshake begun by the last writeHello().
  Result<TransportKeys> readReply(Bytes message);

  // The index the last hello carries: replies and cookie replies name it.
  uint32_t index() const noexcept { return index_; }

 private:
  Initiator(const KeyPair& self, const PublicKey& responder) : self_(self), responder_(responder) {}
  KeyPair self_;
  PublicKey responder_;
  PresharedKey psk_;
  Hash mac1Key_{};    // for our hellos, from the responder's key
  Hash replyMac1Key_{};  // for replies to us, from our key
  Hash cookieKey_{};
  // The handshake in progress.
  std::optional<SymmetricState> state_;
  std::optional<KeyPair> ephemeral_;
  uint32_t index_ = 0;
  std::array<uint8_t, kMacBytes> lastMac1_{};
  Timestamp lastTimestamp_{};
  std::optional<Cookie> cookie_;
  Instant cookieReceived_{};
};

struct ResponderOptions {
  std::vector<PublicKey> allowedClients;  // static keys that may connect
  bool anyClient = false;                 // or: any key (authenticates the server only)
  std::optional<PresharedKey> psk;        // required of every client when set
  // Under load (more hellos than this in the current second, 0: always) a hello must carry a
  // valid cookie; without one it is answered with a cookie reply and nothing is kept.
  uint32_t cookieAboveHellosPerSecond = 1000;
  std::chrono::seconds cookieLifetime{120};
  RateLimiterOptions rate;
  // Latest hello timestamp per client key, for refusing replays; bounded for anyClient.
  size_t maxTrackedClients = 65536;
  // The transport's session table: true when a candidate local index is taken.
  std::function<bool(uint32_t)> indexInUse;
};

struct HelloOutcome {
  std::vector<uint8_t> reply;  // send to the hello's source: a reply or a cookie reply
  bool accepted = false;       // reply is a handshake reply; client and keys are set
  PublicKey client;
  TransportKeys keys;
};

class Responder {
 public:
  static Result<Responder> create(const KeyPair& self, ResponderOptions options, Instant now = Clock::now());

  // `source` is the datagram's source address in any canonical byte form (the transport's
  // choice, e.g. 16 address bytes and 2 port bytes); cookies are bound to it.
  // Errors: kBadFrame (malformed, bad MAC, failed decryption, replayed timestamp),
  // kPermissionDenied (client key not allowed), kResourceExhausted (rate limited).
  Result<HelloOutcome> readHello(Bytes message, Bytes source, Instant now = Clock::now());
  // Makes the ephemeral key pair of the next accepted hello now, so that its X25519 work is
  // off that handshake's critical path (the endpoint calls it after it sent a reply). Each is
  // used by one handshake only; without one, readHello makes it itself.
  void prepare() noexcept;

 private:
  Responder(const KeyPair& self, ResponderOptions options, CookieJar jar, RateLimiter limiter);
  bool underLoad(Instant now);
  Result<HelloOutcome> cookieReply(Bytes message, Bytes source, Instant now);
  bool allowed(const PublicKey& client) const;

  struct KeyHash {
    size_t operator()(const PublicKey& k) const noexcept;
  };
  KeyPair self_;
  ResponderOptions options_;
  CookieJar cookies_;
  RateLimiter limiter_;
  Hash mac1Key_{};
  Hash cookieKey_{};
  std::optional<KeyPair> nextEphemeral_;  // prepare()'s
  std::unordered_map<PublicKey, Timestamp, KeyHash> lastHello_;
  std::deque<PublicKey> helloOrder_;  // first-seen order: the oldest entry goes when full
  Instant loadSecond_{};
  uint32_t hellosThisSecond_ = 0;
};

}  // namespace lrpc::secure
