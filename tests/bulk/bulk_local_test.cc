// Bulk arguments and results on the same host: 64 MiB both ways with the content checked,
// through generated stubs and through lrpc::SharedBuffer (the caller writes in place), with
// the server's out-of-band limit set to exactly 64 MiB and the procedure's other A-stack held
// (the receiver's buffers nearly full): what fits works, one byte more is refused with
// kResourceExhausted, and the binding stays usable. Also $Lrpc.inPlace arguments of every size,
// and one rewritten by the client during the call.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "every_type.lrpc.h"
#include "runtime/codec.h"
#include "runtime/exporter.h"
#include "runtime/import.h"
#include "runtime/shared_buffer.h"
#include "tests/integration/exporter_process.h"
#include "tests/integration/harness.h"
#include "tests/integration/per_mode.h"
#include "tests/testing/every_type_impl.h"
#include "tests/testing/pattern.h"
#include "tests/testing/recycling_blobs.h"
#include "tests/testing/taking_blobs.h"

namespace lrpc::testing {
namespace {

constexpr size_t kBig = size_t{64} << 20;

// Forks a process serving `Iface` through an `Impl` as `name` (Everything as "every" by
// default), out-of-band tails limited to 64 MiB.
template <class Iface = Everything, class Impl = EveryTypeImpl<Everything::Server>>
class BulkServer : public ExporterProcess {
 public:
  explicit BulkServer(const std::string& dir, const char* name = "every")
      : ExporterProcess(dir, exportOne<Iface, Impl>(name), bigTails()) {}
  bool ok() const { return up(); }

 private:
  static ExporterOptions bigTails() {
    ExporterOptions o;
    o.maxOutOfBandBytes = kBig;
    return o;
  }
};

class BulkLocal : public PerModeTest {
 protected:
  void SetUp() override {
    server_ = std::make_unique<BulkServer<>>(dir_.path());
    ASSERT_TRUE(server_->ok());
    Result<Everything::Client> c = lrpc::import<Everything>("every", opts());
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    client_ = std::make_unique<Everything::Client>(std::move(*c));
  }

  std::unique_ptr<BulkServer<>> server_;
  std::unique_ptr<Everything::Client> client_;
};

// One SharedBuffer call of Everything.data (echo): the argument written in place, the result
// read from the result segment and compared with what was sent.
void sharedEcho(const Everything::Client& client, size_t n, uint32_t seed) {
  Result<SharedBuffer> buf = SharedBuffer::allocate(*client.binding(), Everything::kData, n);
  ASSERT_TRUE(buf.isOk()) << buf.status().toString();
  ASSERT_EQ(buf->bytes().size(), n);
  fillPattern(buf->bytes(), seed);
  Blobs::DataArgsFrame frame{{0, static_cast<uint32_t>(n)}};
  std::memcpy(buf->args(), &frame, sizeof frame);
  ASSERT_TRUE(buf->invoke().isOk());
  Blobs::DataResultsFrame results;
  std::memcpy(&results, buf->results(), sizeof results);
  std::span<const std::byte> tail = buf->resultTail();
  ASSERT_TRUE(detail::varRefOk(results.d, tail.size(), 1));
  ASSERT_EQ(results.d.length, n);
  // The server is trusted in this test; a real caller copies first (shared_buffer.h).
  std::vector<uint8_t> want = pattern(n, seed);
  EXPECT_EQ(std::memcmp(tail.data() + results.d.offset, want.data(), n), 0);
}

TEST_P(BulkLocal, SharedBufferSixtyFourMiBRoundTrip) {
  sharedEcho(*client_, kBig, 7);
  // The segments stay mapped and are reused: smaller calls, then a full-size one again.
  sharedEcho(*client_, 3 << 20, 8);
  sharedEcho(*client_, 100, 9);  // fits inline in the A-stack
  sharedEcho(*client_, kBig, 10);
  // Generated stubs still work on the same A-stacks afterwards.
  std::vector<uint8_t> small = pattern(200'000, 11);
  EXPECT_EQ(*client_->data(small), small);
}

// Large Data arguments of changing sizes, one after another on the same A-stacks: the server
// copies each into the buffer it kept from the previous one (detail::SpareBytes), larger or
// smaller, and every echo comes back with exactly its own bytes.
// One thread's calls, so one A-stack and one kept server call object (ServerSlot::call): tails
// out of band and inline in turn, and each result is its own call's, whatever the one before.
TEST_P(BulkLocal, LargeArgumentsOfChangingSizesKeepTheirOwnBytes) {
  const size_t sizes[] = {size_t{3} << 20, (size_t{1} << 20) + 5, size_t{2} << 20, size_t{6} << 20,
                          (size_t{1} << 20) - 1, size_t{1} << 20, 4096, 100, 0, size_t{1} << 20, 7};
  uint32_t seed = 11;
  for (size_t n : sizes) {
    const std::vector<uint8_t> sent = pattern(n, ++seed);
    Result<std::vector<uint8_t>> back = client_->data(sent);
    ASSERT_TRUE(back.isOk()) << n << ": " << back.status().toString();
    ASSERT_EQ(back->size(), n);
    EXPECT_TRUE(*back == sent) << n;
  }
}

// Results written into the caller's own vector (lrpc::Into): each call's exact bytes, larger
// and smaller ones in turn, and once the vector has held the largest, its storage is the
// one every later result lands in.
TEST_P(BulkLocal, ResultsIntoTheCallersVectorReuseItsStorage) {
  std::vector<uint8_t> out = pattern(100, 1);  // stale bytes that must not survive
  const size_t sizes[] = {size_t{2} << 20, 70'000, (size_t{2} << 20) - 3, 0, size_t{2} << 20, 5};
  const uint8_t* storage = nullptr;
  uint32_t seed = 30;
  for (size_t n : sizes) {
    const std::vector<uint8_t> sent = pattern(n, ++seed);
    Status s = client_->data(sent, lrpc::into(out));
    ASSERT_TRUE(s.isOk()) << n << ": " << s.toString();
    ASSERT_EQ(out.size(), n);
    EXPECT_TRUE(out == sent) << n;
    if (storage == nullptr) storage = out.data();
    EXPECT_EQ(storage, out.data()) << n << ": the result moved to new storage";
  }
}

TEST_P(BulkLocal, AtTheServersLimitWithTheOtherAStackHeld) {
  // `data` has two A-stacks ($Lrpc.astacks(2)): hold one, so the calls below get the last.
  auto held = std::make_unique<Result<SharedBuffer>>(
      SharedBuffer::allocate(*client_->binding(), Everything::kData, 1 << 20));
  ASSERT_TRUE(held->isOk()) << held->status().toString();

  std::vector<uint8_t> big = pattern(kBig - 8, 12);  // the tail of exactly 64 MiB, 8-aligned
  big.resize(kBig);
  Result<std::vector<uint8_t>> back = client_->data(big);
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_TRUE(*back == big);

  std::vector<uint8_t> over(kBig + 1, 1);
  Result<std::vector<uint8_t>> refused = client_->data(over);
  ASSERT_FALSE(refused.isOk());
  EXPECT_EQ(refused.status().code(), Errc::kResourceExhausted) << refused.status().toString();
  Result<SharedBuffer> tooBig = SharedBuffer::allocate(*client_->binding(), Everything::kData, kBig + 1);
  ASSERT_FALSE(tooBig.isOk());
  EXPECT_EQ(tooBig.status().code(), Errc::kResourceExhausted);

  // Still usable, on both A-stacks.
  std::vector<uint8_t> again = pattern(5 << 20, 13);
  EXPECT_EQ(*client_->data(again), again);
  held.reset();  // gives its A-stack back
  sharedEcho(*client_, 1 << 20, 14);
}

// $Lrpc.inPlace (Blobs.digest): the handler reads the argument where the client wrote it, inline
// in the A-stack, in the out-of-band segment, or streamed into it, up to 64 MiB.
TEST_P(BulkLocal, InPlaceArgumentsUpToSixtyFourMiB) {
  for (size_t n : {size_t{0}, size_t{100}, size_t{5000}, size_t{300'003}, kBig}) {
    std::vector<uint8_t> in = pattern(n, static_cast<uint32_t>(n) + 1);
    Result<Blobs::DigestResults> r = client_->digest(in);
    ASSERT_TRUE(r.isOk()) << n << ": " << r.status().toString();
    EXPECT_EQ(r->n, n);
    EXPECT_EQ(r->hash, fnv1a(in)) << n;
  }
}

// A client that keeps rewriting an in-place argument during the call changes only what the
// handler reads, never how much: every call completes on exactly the bytes it announced.
TEST_P(BulkLocal, InPlaceArgumentRewrittenDuringTheCall) {
  constexpr size_t kSize = 1 << 20;
  for (int round = 0; round < 20; ++round) {
    Result<SharedBuffer> buf = SharedBuffer::allocate(*client_->binding(), Everything::kDigest, kSize);
    ASSERT_TRUE(buf.isOk()) << buf.status().toString();
    Blobs::DigestArgsFrame frame{{0, static_cast<uint32_t>(kSize)}};
    std::memcpy(buf->args(), &frame, sizeof frame);
    auto* bytes = reinterpret_cast<uint8_t*>(buf->bytes().data());
    std::atomic<bool> stop{false};
    std::thread vandal([&] {
      for (uint32_t x = 1; !stop.load(std::memory_order_relaxed); x = x * 1103515245u + 12345u) {
        detail::storeOnce(bytes[x % kSize], static_cast<uint8_t>(x >> 24));
      }
    });
    Status s = buf->invoke();
    stop.store(true);
    vandal.join();
    ASSERT_TRUE(s.isOk()) << s.toString();
    Blobs::DigestResults results;
    std::memcpy(&results, buf->results(), sizeof results);
    EXPECT_EQ(results.n, kSize);
  }
  std::vector<uint8_t> honest = pattern(kSize, 99);
  Result<Blobs::DigestResults> r = client_->digest(honest);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->hash, fnv1a(honest));
}

// SharedBuffer::start/ready: a payload produced piece by piece while the server copies out
// what is final. The echo (copy "E" in pieces) and the in-place digest (waits for all of it)
// both see exactly what was produced, at sizes that stream and one that is inline.
TEST_P(BulkLocal, SharedBufferProducedWhileTheServerReads) {
  for (size_t n : {size_t{100}, size_t{300'001}, size_t{5} << 20}) {
    std::vector<uint8_t> want = pattern(n, static_cast<uint32_t>(n));
    for (uint32_t procedure : {Everything::kData, Everything::kDigest}) {
      Result<SharedBuffer> buf = SharedBuffer::allocate(*client_->binding(), procedure, n);
      ASSERT_TRUE(buf.isOk()) << buf.status().toString();
      Blobs::DataArgsFrame frame{{0, static_cast<uint32_t>(n)}};  // the same VarRef for digest
      static_assert(sizeof(Blobs::DataArgsFrame) == sizeof(Blobs::DigestArgsFrame));
      std::memcpy(buf->args(), &frame, sizeof frame);
      EXPECT_EQ(buf->start(), n > 100) << n;  // 100 bytes lie inline in the A-stack
      EXPECT_FALSE(buf->start());             // once only
      constexpr size_t kPiece = 40'000;       // not a multiple of anything the server uses
      for (size_t done = 0; done < n;) {
        size_t c = std::min(kPiece, n - done);
        std::memcpy(buf->bytes().data() + done, want.data() + done, c);
        done += c;
        buf->ready(done);
      }
      ASSERT_TRUE(buf->invoke().isOk()) << n;
      if (procedure == Everything::kData) {
        Blobs::DataResultsFrame results;
        std::memcpy(&results, buf->results(), sizeof results);
        std::span<const std::byte> tail = buf->resultTail();
        ASSERT_TRUE(detail::varRefOk(results.d, tail.size(), 1));
        ASSERT_EQ(results.d.length, n);
        EXPECT_EQ(std::memcmp(tail.data() + results.d.offset, want.data(), n), 0) << n;
      } else {
        Blobs::DigestResults results;
        std::memcpy(&results, buf->results(), sizeof results);
        EXPECT_EQ(results.n, n);
        EXPECT_EQ(results.hash, fnv1a(want)) << n;
      }
    }
  }
}

// A streamed SharedBuffer dropped before invoke(): the server still completes the call (on
// whatever the buffer holds), the A-stack comes back, and the next calls are right.
TEST_P(BulkLocal, SharedBufferStartedButNeverInvoked) {
  for (int i = 0; i < 4; ++i) {  // more than the procedure's two A-stacks
    Result<SharedBuffer> buf = SharedBuffer::allocate(*client_->binding(), Everything::kData, 1 << 20);
    ASSERT_TRUE(buf.isOk()) << buf.status().toString();
    Blobs::DataArgsFrame frame{{0, 1 << 20}};
    std::memcpy(buf->args(), &frame, sizeof frame);
    ASSERT_TRUE(buf->start());
    buf->ready(1000);
  }
  std::vector<uint8_t> again = pattern(700'000, 5);
  Result<std::vector<uint8_t>> back = client_->data(again);
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_TRUE(*back == again);
  sharedEcho(*client_, 1 << 20, 6);
}

TEST_P(BulkLocal, SharedBufferRefusesWhatItCannotServe) {
  Result<SharedBuffer> fixed = SharedBuffer::allocate(*client_->binding(), Everything::kPing, 8);
  ASSERT_FALSE(fixed.isOk());
  EXPECT_EQ(fixed.status().code(), Errc::kInvalidArgument);
  Result<SharedBuffer> once = SharedBuffer::allocate(*client_->binding(), Everything::kData, 16);
  ASSERT_TRUE(once.isOk());
  Blobs::DataArgsFrame frame{{0, 16}};
  std::memcpy(once->args(), &frame, sizeof frame);
  EXPECT_TRUE(once->invoke().isOk());
  EXPECT_EQ(once->invoke().code(), Errc::kInvalidArgument);
}

TEST(SharedBufferRemote, IsUnsupported) {
  Binding remote(Everything::kDescriptor, static_cast<CallChannel*>(nullptr), nullptr);
  Result<SharedBuffer> r = SharedBuffer::allocate(remote, Everything::kData, 16);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Errc::kUnsupported);
}

// Serves Blobs through `Impl` in a process of its own, echoes each of `sizes` (checking the
// bytes that come back), then answers what the server's digest() reports.
template <class Impl>
void echoEach(std::span<const size_t> sizes, uint32_t seed, Blobs::DigestResults& seen) {
  TempDir dir;
  BulkServer<Blobs, Impl> server(dir.path(), "blobs");
  ASSERT_TRUE(server.ok());
  ImportOptions io;
  io.dir = dir.path();
  Result<Blobs::Client> client = lrpc::import<Blobs>("blobs", io);
  ASSERT_TRUE(client.isOk()) << client.status().toString();
  for (size_t n : sizes) {
    const std::vector<uint8_t> sent = pattern(n, ++seed);
    Result<std::vector<uint8_t>> back = client->data(sent);
    ASSERT_TRUE(back.isOk()) << n << ": " << back.status().toString();
    EXPECT_TRUE(*back == sent) << n;
  }
  Result<Blobs::DigestResults> digest = client->digest({});
  ASSERT_TRUE(digest.isOk()) << digest.status().toString();
  seen = *digest;
}

// A handler building large results in lrpc::resultBuffer() gets, from its second call on, the
// storage of the last large result copied out, empty: each echo exact, larger or smaller.
TEST(ResultBuffer, AHandlerGetsTheLastLargeResultsStorageEmpty) {
  const size_t sizes[] = {size_t{2} << 20, size_t{2} << 20, (size_t{1} << 20) + 3, size_t{2} << 20, 100, size_t{2} << 20};
  Blobs::DigestResults seen{};
  ASSERT_NO_FATAL_FAILURE(echoEach<RecyclingBlobs>(sizes, 60, seen));
  EXPECT_EQ(seen.hash, std::size(sizes) - 1) << "calls that found the last result's storage";
  EXPECT_EQ(seen.n, 0u) << "calls whose buffer held bytes";
}

TEST(ResultBuffer, OutsideAHandlerIsAnEmptyVector) {
  std::vector<uint8_t> v = lrpc::resultBuffer();
  EXPECT_TRUE(v.empty());
  EXPECT_EQ(v.capacity(), 0u);
}

// lrpc::takeArgument in an echo: every call gets its argument's copy "E" itself as the result
// (no copy of its own), the bytes come back exact, and a large argument arrives in the storage
// the last large result went back in: the path then keeps one buffer, not one per direction.
TEST(TakeArgument, AnEchoReturnsItsArgumentsCopyAndItsStorageComesBack) {
  // 2 MiB three times: the 2nd and 3rd arrive where the last result was. 600 KB (streamed,
  // under the kept size) and 100 B leave the kept 2 MiB buffer alone; the first 3 MiB call
  // takes it and outgrows it, so only the second 3 MiB call arrives where the last one was.
  const size_t sizes[] = {size_t{2} << 20, size_t{2} << 20, size_t{2} << 20, 600'000, 100,
                          size_t{3} << 20, size_t{3} << 20};
  Blobs::DigestResults seen{};
  ASSERT_NO_FATAL_FAILURE(echoEach<TakingBlobs>(sizes, 70, seen));
  EXPECT_EQ(seen.hash, std::size(sizes)) << "calls whose takeArgument moved the copy";
  EXPECT_EQ(seen.n, 3u) << "calls whose argument arrived in the last large result's storage";
}

TEST(TakeArgument, OutsideAHandlerIsACopy) {
  const std::vector<uint8_t> bytes = pattern(5000, 3);
  std::vector<uint8_t> v = lrpc::takeArgument(bytes);
  EXPECT_TRUE(v == bytes);
  EXPECT_NE(v.data(), bytes.data());
  EXPECT_TRUE(lrpc::takeArgument({}).empty());
}

INSTANTIATE_TEST_SUITE_P(Modes, BulkLocal,
                         ::testing::ValuesIn(kTransferModes), modeTestName);

}  // namespace
}  // namespace lrpc::testing
