// Sealed data datagrams of one session, after the handshake.
//
//   0  magic "LS" (2) | 2 type kData (1) | 3 key generation mod 256 (1)
//   4  receiver index (4, little-endian)  | 8 counter (8, little-endian)
//   16 AES-256-GCM ciphertext of the clear datagram | tag (16)
//
// Bytes 0..16 are the associated data; the nonce is the counter (Noise's AESGCM nonce).
// Each direction counts from 0 in each key generation and never reuses a counter; the
// receiver keeps an RFC 6479 window per generation. The sender moves to the next generation
// (Noise's REKEY of its key) after a message count or a time; the receiver follows when a
// datagram of the next generation authenticates, and keeps opening the previous one for a
// grace period, so datagrams in flight across the rotation still arrive.
//
// seal() and open() touch separate state: one thread may seal while another opens, but two
// threads must not both seal (or both open) at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "runtime/base/status.h"
#include "transport/secure/crypto.h"
#include "transport/secure/handshake.h"
#include "transport/secure/messages.h"
#include "transport/secure/replay_window.h"

namespace lrpc::secure {

struct DataOptions {
  uint64_t rekeyAfterMessages = uint64_t{1} << 48;  // per direction and generation
  std::chrono::seconds rekeyAfterTime{120};
  std::chrono::seconds previousKeyGrace{10};  // the previous generation still opens this long
};

class DataChannel {
 public:
  static constexpr size_t kOverhead = data::kOverhead;  // 32 bytes per datagram

  static Result<DataChannel> create(const TransportKeys& keys, DataOptions options = {}, Instant now = Clock::now());
  DataChannel(DataChannel&&) noexcept = default;
  DataChannel& operator=(DataChannel&&) noexcept = default;
  ~DataChannel();

  // Seals `plain` into `out` (at least plain.size() + kOverhead bytes); returns the datagram's
  // size. `plain` may already sit at out.data() + data::kHeaderBytes (sealed in place).
  // kResourceExhausted once the counter space is spent (only when rekeying by count is off).
  Result<size_t> seal(Bytes plain, MutableBytes out, Instant now = Clock::now());
  // Opens a datagram into `out` (at least datagram.size() - kOverhead bytes); returns the
  // clear datagram's size. `out` may be datagram.data() + data::kHeaderBytes (in place).
  // kBadFrame for anything that is not a fresh, authentic datagram of this session: drop it.
  Result<size_t> open(Bytes datagram, MutableBytes out, Instant now = Clock::now());

  // The receiver index of a data datagram (to find its session), or nullopt.
  static std::optional<uint32_t> receiverOf(Bytes datagram) noexcept;

  uint32_t sendGeneration() const noexcept { return send_.generation; }
  uint32_t receiveGeneration() const noexcept { return current_.generation; }
  // Tests only: jump the send counter (the nonce-exhaustion and near-2^64 cases).
  void setSendCounterForTest(uint64_t counter) noexcept { send_.counter = counter; }

 private:
  struct Sender {
    Key key{};
    AeadContext ctx;
    uint64_t counter = 0;
    uint32_t generation = 0;
    Instant started{};
  };
  struct Receiver {
    Key key{};
    AeadContext ctx;
    ReplayWindow window;
    uint32_t generation = 0;
    bool valid = false;
  };
  DataChannel() = default;
  Status rotateSend(Instant now);
  Status deriveNext();

  DataOptions options_;
  uint32_t localIndex_ = 0;
  uint32_t remoteIndex_ = 0;
  Sender send_;
  Receiver previous_;  // valid until previousUntil_
  Receiver current_;
  Receiver next_;  // derived on the first datagram that names it
  Instant previousUntil_{};
};

// Noise's REKEY(k): the first 32 bytes of ENCRYPT(k, 2^64 - 1, empty, 32 zero bytes).
Result<Key> rekey(const Key& key);

}  // namespace lrpc::secure
