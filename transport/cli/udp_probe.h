// The network form of `lrpc ping`: a session Hello that asks for no interface (id 0), which the
// server's polling thread looks up and refuses with the name's real interface, or with
// kNotFound. One probe is one round trip through the network and the thread that also runs the
// server's handlers; the server opens no lrpc session for it. It needs no schema, so it works
// on any exported name.
//
// udp+clear://host:port/name: the Hello goes in clear text. udp://host:port/name?key=<server
// key>: the probe first completes the secure handshake (Noise_IKpsk2, the server's key pinned,
// with this client's key from --key or a fresh one, and --psk when the server requires one),
// then every Hello and answer is sealed under the session's keys. The handshake proves that the
// server holds the pinned key; it is timed once, apart from the round trips. Like any secure
// client, the probe takes one of the server's (bounded) secure session slots while it runs.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/fd.h"
#include "runtime/base/status.h"
#include "transport/secure/data_channel.h"
#include "transport/secure/handshake.h"
#include "transport/wire.h"

namespace lrpc::cli {

struct ProbeKeys {
  std::string keyFile;  // this client's private key (`lrpc keygen`); empty: a fresh key pair
  std::string pskFile;  // the pre-shared key the server requires; empty: none
};

class UdpProbe {
 public:
  using Clock = std::chrono::steady_clock;

  // Parses the URI (udp+clear://, or udp:// with ?key= for a secure server; udp:// without a
  // key is probed in clear text) and opens a UDP socket connected to the server. Key files are
  // loaded here (their errors name the file).
  static Result<std::unique_ptr<UdpProbe>> open(std::string_view uri, const ProbeKeys& keys = {});

  // One round trip. Ok when the server answered for the name (the answer's text, which names
  // its interface, is kept in lastAnswer()); kNotFound when it serves no such name;
  // kDeadlineExceeded when nothing came back in time (on a secure server, also when it did
  // not answer the handshake: a wrong pinned key, or a client key or psk it does not take).
  Result<std::chrono::nanoseconds> probe(std::chrono::nanoseconds timeout);
  const std::string& lastAnswer() const noexcept { return answer_; }
  const std::string& server() const noexcept { return server_; }
  const std::string& name() const noexcept { return name_; }
  bool secure() const noexcept { return initiator_.has_value(); }
  // The secure handshake's time, once the first probe has completed it.
  std::optional<std::chrono::nanoseconds> handshakeTime() const noexcept { return handshakeTime_; }

 private:
  UdpProbe(OwnedFd fd, std::string server, std::string name) noexcept;
  Status handshake(Clock::time_point deadline);
  // Sends one lrpc datagram, sealed when secure.
  Status sendDatagram(std::span<const std::byte> bytes);
  // The next datagram from the server (raw) into buf_, until `deadline`: its size.
  Result<size_t> receiveRaw(Clock::time_point deadline);
  // The next lrpc datagram from the server, opened when secure (others are skipped).
  Result<std::span<const std::byte>> receiveDatagram(Clock::time_point deadline);

  OwnedFd fd_;
  std::string server_;
  std::string name_;
  std::string answer_;
  std::optional<secure::Initiator> initiator_;  // secure only
  std::optional<secure::DataChannel> channel_;  // secure, after the handshake
  std::optional<std::chrono::nanoseconds> handshakeTime_;
  std::vector<std::byte> buf_ = std::vector<std::byte>(net::kDefaultMaxDatagram);
  std::vector<std::byte> opened_ = std::vector<std::byte>(net::kDefaultMaxDatagram);
  std::vector<uint8_t> sealed_ = std::vector<uint8_t>(net::kDefaultMaxDatagram + secure::DataChannel::kOverhead);
};

}  // namespace lrpc::cli
