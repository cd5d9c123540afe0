// The AEAD choice for transport/secure/: libsodium against OpenSSL's libcrypto, AES-256-GCM and
// ChaCha20-Poly1305, one seal plus one open per iteration, for a one-cell datagram (64 bytes)
// and a GRO-sized run (64 KiB). Each library is used the way the transport would use it: keys
// expanded once per session (sodium's beforenm state, one reused EVP_CIPHER_CTX per direction),
// a fresh 96-bit counter nonce per message, 32 bytes of associated data (the datagram header).
// Then the chosen module itself (transport/secure/): one whole handshake in process, and a
// DataChannel seal + open of a clear datagram.
//   cmake -S . -B build-bench -G Ninja -DLRPC_BUILD_BENCH=ON && cmake --build build-bench --target lrpc_crypto_bench
//   build-bench/bench/lrpc_crypto_bench
#include <benchmark/benchmark.h>
#include <openssl/evp.h>
#include <sodium.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "transport/secure/data_channel.h"
#include "transport/secure/handshake.h"

namespace {

constexpr size_t kAad = 32;
constexpr size_t kTag = 16;

struct Buffers {
  explicit Buffers(size_t n) : plain(n, 0x5a), sealed(n + kTag), opened(n) { aad.fill(0x11); key.fill(0x42); }
  std::vector<unsigned char> plain, sealed, opened;
  std::array<unsigned char, kAad> aad{};
  std::array<unsigned char, 32> key{};
  std::array<unsigned char, 12> nonce{};
  uint64_t counter = 0;
  void nextNonce() {
    ++counter;
    std::memcpy(nonce.data() + 4, &counter, sizeof counter);
  }
};

void finish(benchmark::State& state, size_t n) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(n));
}

void sodiumAes(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  if (sodium_init() < 0 || !crypto_aead_aes256gcm_is_available()) {
    state.SkipWithError("libsodium AES-256-GCM not available on this CPU");
    return;
  }
  Buffers b(n);
  crypto_aead_aes256gcm_state st;
  crypto_aead_aes256gcm_beforenm(&st, b.key.data());
  for (auto _ : state) {
    b.nextNonce();
    unsigned long long len = 0;
    crypto_aead_aes256gcm_encrypt_afternm(b.sealed.data(), &len, b.plain.data(), n, b.aad.data(),
                                          kAad, nullptr, b.nonce.data(), &st);
    unsigned long long out = 0;
    if (crypto_aead_aes256gcm_decrypt_afternm(b.opened.data(), &out, nullptr, b.sealed.data(), len,
                                              b.aad.data(), kAad, b.nonce.data(), &st) != 0)
      std::abort();
    benchmark::DoNotOptimize(b.opened.data());
  }
  finish(state, n);
}

void sodiumChacha(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  if (sodium_init() < 0) {
    state.SkipWithError("sodium_init failed");
    return;
  }
  Buffers b(n);
  for (auto _ : state) {
    b.nextNonce();
    unsigned long long len = 0;
    crypto_aead_chacha20poly1305_ietf_encrypt(b.sealed.data(), &len, b.plain.data(), n, b.aad.data(),
                                              kAad, nullptr, b.nonce.data(), b.key.data());
    unsigned long long out = 0;
    if (crypto_aead_chacha20poly1305_ietf_decrypt(b.opened.data(), &out, nullptr, b.sealed.data(), len,
                                                  b.aad.data(), kAad, b.nonce.data(), b.key.data()) != 0)
      std::abort();
    benchmark::DoNotOptimize(b.opened.data());
  }
  finish(state, n);
}

// One context per direction, keyed once; per message only the nonce is set.
void opensslAead(benchmark::State& state, const EVP_CIPHER* cipher) {
  const size_t n = static_cast<size_t>(state.range(0));
  Buffers b(n);
  EVP_CIPHER_CTX* enc = EVP_CIPHER_CTX_new();
  EVP_CIPHER_CTX* dec = EVP_CIPHER_CTX_new();
  EVP_EncryptInit_ex(enc, cipher, nullptr, b.key.data(), nullptr);
  EVP_DecryptInit_ex(dec, cipher, nullptr, b.key.data(), nullptr);
  const int in = static_cast<int>(n);
  for (auto _ : state) {
    b.nextNonce();
    int len = 0;
    int tail = 0;
    EVP_EncryptInit_ex(enc, nullptr, nullptr, nullptr, b.nonce.data());
    EVP_EncryptUpdate(enc, nullptr, &len, b.aad.data(), kAad);
    EVP_EncryptUpdate(enc, b.sealed.data(), &len, b.plain.data(), in);
    EVP_EncryptFinal_ex(enc, b.sealed.data() + len, &tail);
    EVP_CIPHER_CTX_ctrl(enc, EVP_CTRL_AEAD_GET_TAG, kTag, b.sealed.data() + n);

    EVP_DecryptInit_ex(dec, nullptr, nullptr, nullptr, b.nonce.data());
    EVP_DecryptUpdate(dec, nullptr, &len, b.aad.data(), kAad);
    EVP_DecryptUpdate(dec, b.opened.data(), &len, b.sealed.data(), in);
    EVP_CIPHER_CTX_ctrl(dec, EVP_CTRL_AEAD_SET_TAG, kTag, b.sealed.data() + n);
    if (EVP_DecryptFinal_ex(dec, b.opened.data() + len, &tail) != 1) std::abort();
    benchmark::DoNotOptimize(b.opened.data());
  }
  EVP_CIPHER_CTX_free(enc);
  EVP_CIPHER_CTX_free(dec);
  finish(state, n);
}

void opensslAes(benchmark::State& state) { opensslAead(state, EVP_aes_256_gcm()); }
void opensslChacha(benchmark::State& state) { opensslAead(state, EVP_chacha20_poly1305()); }

BENCHMARK(sodiumAes)->Name("sodium/aes256gcm")->Arg(64)->Arg(256)->Arg(512)->Arg(1024)->Arg(1440)->Arg(65536);
BENCHMARK(sodiumChacha)->Name("sodium/chacha20poly1305")->Arg(64)->Arg(65536);
BENCHMARK(opensslAes)->Name("openssl/aes256gcm")->Arg(64)->Arg(256)->Arg(512)->Arg(1024)->Arg(1440)->Arg(65536);
BENCHMARK(opensslChacha)->Name("openssl/chacha20poly1305")->Arg(64)->Arg(65536);

namespace sec = lrpc::secure;

// writeHello + readHello + readReply: the CPU both sides spend on one handshake (4 X25519
// operations and a key generation each).
void secureHandshake(benchmark::State& state) {
  auto server = sec::KeyPair::generate();
  auto client = sec::KeyPair::generate();
  sec::ResponderOptions o;
  o.allowedClients = {client->publicKey()};
  o.rate.perSecond = 1e12;
  o.rate.burst = 1e12;
  auto responder = sec::Responder::create(*server, o);
  auto initiator = sec::Initiator::create(*client, server->publicKey());
  const std::vector<uint8_t> source = {127, 0, 0, 1, 0, 1};
  for (auto _ : state) {
    auto hello = initiator->writeHello();
    auto outcome = responder->readHello(*hello, source);
    if (!outcome.isOk() || !outcome->accepted) {
      state.SkipWithError(outcome.status().toString().c_str());
      return;
    }
    auto keys = initiator->readReply(outcome->reply);
    if (!keys.isOk()) {
      state.SkipWithError(keys.status().toString().c_str());
      return;
    }
    benchmark::DoNotOptimize(keys->send.data());
  }
}

// DataChannel::seal then DataChannel::open of one clear datagram of range(0) bytes.
void secureDataChannel(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  auto server = sec::KeyPair::generate();
  auto client = sec::KeyPair::generate();
  sec::ResponderOptions o;
  o.allowedClients = {client->publicKey()};
  auto responder = sec::Responder::create(*server, o);
  auto initiator = sec::Initiator::create(*client, server->publicKey());
  auto outcome = responder->readHello(*initiator->writeHello(), std::vector<uint8_t>{1});
  auto sender = sec::DataChannel::create(initiator->readReply(outcome->reply).value());
  auto receiver = sec::DataChannel::create(outcome->keys);
  std::vector<uint8_t> plain(n, 0x5a), sealed(n + sec::DataChannel::kOverhead), opened(n);
  for (auto _ : state) {
    auto len = sender->seal(plain, sealed);
    auto got = receiver->open(std::span<const uint8_t>(sealed.data(), *len), opened);
    if (!got.isOk()) {
      state.SkipWithError(got.status().toString().c_str());
      return;
    }
    benchmark::DoNotOptimize(opened.data());
  }
  finish(state, n);
}

BENCHMARK(secureHandshake)->Name("lrpc_secure/handshake")->Unit(benchmark::kMicrosecond);
BENCHMARK(secureDataChannel)->Name("lrpc_secure/seal_open")->Arg(64)->Arg(65536);

}  // namespace

BENCHMARK_MAIN();
