// sealAndSend (transport/secure_client_endpoint.h): a window of clear datagrams is sealed and
// handed to the inner endpoint a chunk at a time, in order, every one opening to the bytes it
// was gathered from; sealing errors stop it, send errors do not.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include "transport/secure/handshake.h"
#include "transport/secure_client_endpoint.h"

namespace lrpc::net {
namespace {

namespace sec = lrpc::secure;

// Records what each send() was given, and fails the sends it is told to.
class RecordingEndpoint final : public Endpoint {
 public:
  const char* kind() const noexcept override { return "recording"; }
  NetAddress localAddress() const noexcept override { return {}; }
  Status send(std::span<const OutDatagram> batch) noexcept override {
    sendSizes.push_back(batch.size());
    for (const OutDatagram& d : batch) {
      std::vector<uint8_t> bytes;
      for (uint32_t i = 0; i < d.iovCount; ++i) {
        const auto* p = static_cast<const uint8_t*>(d.iov[i].iov_base);
        bytes.insert(bytes.end(), p, p + d.iov[i].iov_len);
      }
      sent.push_back(std::move(bytes));
    }
    if (failSend == sendSizes.size()) return Status(Errc::kPeerDied, "peer port unreachable");
    return {};
  }
  Result<size_t> receive(DatagramSink&, ReceiveMode, std::chrono::nanoseconds) noexcept override { return size_t{0}; }

  std::vector<size_t> sendSizes;
  std::vector<std::vector<uint8_t>> sent;
  size_t failSend = 0;  // 1-based index of the send() that fails; 0: none
};

struct Channels {
  sec::DataChannel sealer;
  sec::DataChannel opener;
};

Channels channels(sec::DataOptions options = {}) {
  auto server = sec::KeyPair::generate();
  auto client = sec::KeyPair::generate();
  EXPECT_TRUE(server.isOk() && client.isOk());
  sec::ResponderOptions o;
  o.allowedClients = {client->publicKey()};
  auto responder = sec::Responder::create(*server, o);
  auto initiator = sec::Initiator::create(*client, server->publicKey());
  auto hello = initiator->writeHello();
  auto outcome = responder->readHello(*hello, std::vector<uint8_t>{1, 2, 3});
  auto keys = initiator->readReply(outcome->reply);
  EXPECT_TRUE(keys.isOk());
  auto c = sec::DataChannel::create(*keys, options);
  auto s = sec::DataChannel::create(outcome->keys, options);
  EXPECT_TRUE(c.isOk() && s.isOk());
  return {std::move(*c), std::move(*s)};
}

// `n` datagrams of two pieces each (a header and a body of varying length).
struct Window {
  explicit Window(size_t n) : heads(n), bodies(n), out(n) {
    for (size_t i = 0; i < n; ++i) {
      heads[i].fill(static_cast<uint8_t>(i));
      bodies[i].resize(100 + 13 * i);
      std::iota(bodies[i].begin(), bodies[i].end(), static_cast<uint8_t>(i * 7));
      out[i] = OutDatagram{NetAddress{0x0100007f, 9}, {{heads[i].data(), heads[i].size()}, {bodies[i].data(), bodies[i].size()}}, 2};
    }
  }
  std::vector<uint8_t> clear(size_t i) const {
    std::vector<uint8_t> b(heads[i].begin(), heads[i].end());
    b.insert(b.end(), bodies[i].begin(), bodies[i].end());
    return b;
  }
  std::vector<std::array<uint8_t, 24>> heads;
  std::vector<std::vector<uint8_t>> bodies;
  std::vector<OutDatagram> out;
};

TEST(SealAndSend, SendsAWindowInChunksThatEachOpenToTheirBytes) {
  Channels ch = channels();
  RecordingEndpoint inner;
  const size_t n = 3 * kSealChunk + 5;
  Window w(n);
  std::vector<uint8_t> storage;
  std::vector<OutDatagram> out;
  ASSERT_TRUE(sealAndSend(ch.sealer, w.out, inner, storage, out, std::chrono::steady_clock::now()).isOk());
  // In chunks, so that the receiver starts on the first while the rest are sealed.
  ASSERT_EQ(inner.sendSizes, (std::vector<size_t>{kSealChunk, kSealChunk, kSealChunk, 5}));
  ASSERT_EQ(inner.sent.size(), n);
  for (size_t i = 0; i < n; ++i) {
    std::vector<uint8_t> opened(inner.sent[i].size());
    auto got = ch.opener.open(inner.sent[i], opened);
    ASSERT_TRUE(got.isOk()) << i << ": " << got.status().toString();
    opened.resize(*got);
    EXPECT_EQ(opened, w.clear(i)) << "datagram " << i;
  }
  // The storage holds one chunk, not the window.
  size_t largestChunk = 0;
  for (size_t i = 0; i < kSealChunk; ++i) largestChunk += inner.sent[n - 1 - i].size();
  EXPECT_LE(storage.size(), largestChunk);
}

TEST(SealAndSend, AFailedSendLosesOnlyItsChunk) {
  Channels ch = channels();
  RecordingEndpoint inner;
  inner.failSend = 1;
  Window w(2 * kSealChunk);
  std::vector<uint8_t> storage;
  std::vector<OutDatagram> out;
  Status s = sealAndSend(ch.sealer, w.out, inner, storage, out, std::chrono::steady_clock::now());
  EXPECT_EQ(s.code(), Errc::kPeerDied);
  // The second chunk still went (a network loses datagrams; the protocol resends them).
  EXPECT_EQ(inner.sendSizes, (std::vector<size_t>{kSealChunk, kSealChunk}));
}

TEST(SealAndSend, ASealingErrorStopsBeforeTheDatagramsItCouldNotSeal) {
  // Counters left for kSealChunk + 4 datagrams: the fifth of the second chunk cannot be
  // sealed, so that chunk and everything after it stay unsent, and the caller learns why.
  sec::DataOptions o;
  o.rekeyAfterMessages = std::numeric_limits<uint64_t>::max();  // never rekey by count
  Channels ch = channels(o);
  ch.sealer.setSendCounterForTest(std::numeric_limits<uint64_t>::max() - 1 - (kSealChunk + 3));
  RecordingEndpoint inner;
  Window w(3 * kSealChunk);
  std::vector<uint8_t> storage;
  std::vector<OutDatagram> out;
  Status s = sealAndSend(ch.sealer, w.out, inner, storage, out, std::chrono::steady_clock::now());
  EXPECT_EQ(s.code(), Errc::kResourceExhausted) << s.toString();
  EXPECT_EQ(inner.sendSizes, (std::vector<size_t>{kSealChunk}));
}

}  // namespace
}  // namespace lrpc::net
