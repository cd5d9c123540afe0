// Fuzz entry point for the secure transport's parsers: the responder's hello reader, the
// initiator's reply and cookie-reply readers, and the data-datagram opener. MACs and AEAD
// tags would stop random bytes at the first check, so the input is applied to valid
// messages this file builds: byte 0 picks the message, the rest is XORed onto it (and may
// shorten or lengthen it). Every outcome must be a value: no crash, no hang, no UB.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "transport/secure/data_channel.h"
#include "transport/secure/handshake.h"
#include "tests/fuzz/secure_fuzz.h"

namespace lrpc::secure {
namespace {

struct World {
  KeyPair server = *KeyPair::generate();
  KeyPair client = *KeyPair::generate();
  std::vector<uint8_t> source = {192, 0, 2, 1, 0x30, 0x39};
  std::vector<uint8_t> hello, reply, cookieReply, data;
  std::optional<Responder> responder;
  std::optional<Responder> loadedResponder;
  std::optional<Initiator> awaitingCookie;  // copied per input, so each starts pristine
  std::optional<Initiator> awaitingReply;
  std::optional<DataChannel> receiver;

  World() {
    ResponderOptions o;
    o.allowedClients = {client.publicKey()};
    o.rate = RateLimiterOptions{1e9, 1e9, 16};
    responder.emplace(Responder::create(server, o).value());
    ResponderOptions loaded = o;
    loaded.cookieAboveHellosPerSecond = 0;
    loadedResponder.emplace(Responder::create(server, loaded).value());
    Initiator initiator = Initiator::create(client, server.publicKey()).value();
    cookieReply = loadedResponder->readHello(*initiator.writeHello(), source)->reply;
    awaitingCookie.emplace(initiator);
    hello = *initiator.writeHello();
    // Another responder with the same key answers it, so `responder` has not seen it yet.
    auto outcome = Responder::create(server, o).value().readHello(hello, source);
    reply = outcome->reply;
    awaitingReply.emplace(initiator);
    receiver.emplace(DataChannel::create(outcome->keys).value());
    DataChannel sender = DataChannel::create(initiator.readReply(reply).value()).value();
    std::vector<uint8_t> plain(48, 0x5a);
    data.resize(plain.size() + DataChannel::kOverhead);
    data.resize(*sender.seal(plain, data));
  }
};

std::vector<uint8_t> mutate(const std::vector<uint8_t>& base, const uint8_t* mask, size_t n) {
  std::vector<uint8_t> m = base;
  m.resize(n);  // shorter inputs cut the message, longer ones extend it with zeros
  for (size_t i = 0; i < n; ++i) m[i] ^= mask[i];
  return m;
}

}  // namespace

bool fuzzOne(const uint8_t* bytes, size_t size) {
  static World* world = new World();  // built once per process, kept for its lifetime
  if (size == 0) return false;
  const uint8_t* mask = bytes + 1;
  const size_t n = size - 1;
  switch (bytes[0] % kFuzzMessageKinds) {
    case 0: {
      auto r = world->responder->readHello(mutate(world->hello, mask, n), world->source);
      return r.isOk() && r->accepted;
    }
    case 1: {
      auto r = world->loadedResponder->readHello(mutate(world->hello, mask, n), world->source);
      return r.isOk() && r->accepted;
    }
    case 2: {
      Initiator i = *world->awaitingReply;
      return i.readReply(mutate(world->reply, mask, n)).isOk();
    }
    case 3: {
      Initiator i = *world->awaitingCookie;
      return i.readCookieReply(mutate(world->cookieReply, mask, n)).isOk();
    }
    default: {
      auto m = mutate(world->data, mask, n);
      std::vector<uint8_t> out(m.size());
      return world->receiver->open(m, out).isOk();
    }
  }
}

}  // namespace lrpc::secure

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  (void)lrpc::secure::fuzzOne(bytes, size);
  return 0;
}
