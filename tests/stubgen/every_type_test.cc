// Every supported type round-trips through generated stubs: client copy-in, the exact frame
// bytes, server validation and copy-out, the handler, and the results back. Runs each
// interface on its own and through Everything (multiple inheritance, flattened PDL).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "every_type.lrpc.h"
#include "tests/testing/every_type_impl.h"
#include "tests/testing/in_process_channel.h"

namespace lrpc::testing {
namespace {

template <class Iface>
struct Harness {
  Harness() : bound(bindInProcess<Iface>(impl)), client(bound.binding) {}
  EveryTypeImpl<typename Iface::Server> impl;
  InProcess<Iface> bound;
  typename Iface::Client client;
};

Outer sampleOuter(int seed) {
  Outer o{};
  o.a = static_cast<uint8_t>(seed);
  o.inner.flag = seed % 2 == 1;
  o.inner.mood = Mood::kAngry;
  o.inner.small = static_cast<int8_t>(-seed);
  o.big = 1.5 * seed;
  o.point = base::Point{seed, -seed};
  o.flag = true;
  o.nested.v = static_cast<uint16_t>(seed * 1000);
  o.color = base::Color::kBlue;
  return o;
}

void expectSame(const Outer& a, const Outer& b) {
  EXPECT_EQ(a.a, b.a);
  EXPECT_EQ(a.inner.flag, b.inner.flag);
  EXPECT_EQ(a.inner.mood, b.inner.mood);
  EXPECT_EQ(a.inner.small, b.inner.small);
  EXPECT_EQ(a.big, b.big);
  EXPECT_EQ(a.point.x, b.point.x);
  EXPECT_EQ(a.point.y, b.point.y);
  EXPECT_EQ(a.flag, b.flag);
  EXPECT_EQ(a.nested.v, b.nested.v);
  EXPECT_EQ(a.color, b.color);
}

TEST(EveryType, DescriptorsFlattenBasesFirst) {
  EXPECT_EQ(Everything::kProcedureCount, 7u + 8u + 1u + 5u + 1u);
  EXPECT_STREQ(Everything::kProcedures[Everything::kEchoBool].name, "echoBool");
  EXPECT_EQ(Everything::kEchoBool, 0u);
  EXPECT_EQ(Everything::kInts, 7u);
  EXPECT_EQ(Everything::kPing, 15u);  // Echo comes in with Blobs, before Blobs' own methods
  EXPECT_EQ(Everything::kText, 16u);
  EXPECT_EQ(Everything::kSelf, 21u);
  for (uint32_t i = 0; i < Everything::kProcedureCount; ++i) EXPECT_EQ(Everything::kProcedures[i].index, i);
  EXPECT_EQ(Everything::kProcedures[Everything::kSelf].ordinal, 0);
  EXPECT_EQ(Everything::kProcedures[Everything::kLimited].ordinal, 2);
  // astackBytes: the interface's annotation, a method's own, the default, and fixed-only.
  EXPECT_EQ(Blobs::kProcedures[Blobs::kText].astackBytes, 4096u);
  EXPECT_EQ(Blobs::kProcedures[Blobs::kData].astackBytes, 9000u);
  EXPECT_EQ(Blobs::kProcedures[Blobs::kData].astackCount, 2u);
  EXPECT_EQ(Lists::kProcedures[Lists::kInts].astackBytes, 1500u);
  EXPECT_TRUE(Lists::kProcedures[Lists::kInts].variable);
  EXPECT_FALSE(Blobs::kProcedures[Blobs::kPing].variable);
  EXPECT_EQ(Blobs::kProcedures[Blobs::kPing].astackBytes, 8u);
  EXPECT_EQ(Scalars::kProcedures[Scalars::kOuter].argsSize, sizeof(Outer));
  // Interfaces differ in identity and signature.
  EXPECT_NE(Everything::kDescriptor.id, Scalars::kDescriptor.id);
  EXPECT_NE(Everything::kDescriptor.signatureHash, Scalars::kDescriptor.signatureHash);
  EXPECT_NE(Everything::kDescriptor.signatureHash, 0u);
}

TEST(EveryType, FrameLayoutIsNaturalAlignmentInDeclarationOrder) {
  EXPECT_EQ(offsetof(Blobs::MixedArgsFrame, pre), 0u);
  EXPECT_EQ(offsetof(Blobs::MixedArgsFrame, t), 4u);
  EXPECT_EQ(offsetof(Blobs::MixedArgsFrame, mid), 12u);
  EXPECT_EQ(offsetof(Blobs::MixedArgsFrame, d), 16u);
  EXPECT_EQ(offsetof(Blobs::MixedArgsFrame, post), 24u);
  EXPECT_EQ(Blobs::kProcedures[Blobs::kMixed].argsSize, 32u);
  EXPECT_EQ(Blobs::kProcedures[Blobs::kMixed].align, 8u);
}

TEST(EveryType, Scalars) {
  Harness<Scalars> h;
  for (bool v : {false, true}) {
    auto r = h.client.echoBool(v);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    EXPECT_EQ(*r, v);
  }
  auto ints = h.client.allInts(-8, -16000, -32000000, std::numeric_limits<int64_t>::min(), 250, 65000, 4000000000u,
                               std::numeric_limits<uint64_t>::max());
  ASSERT_TRUE(ints.isOk()) << ints.status().toString();
  EXPECT_EQ(ints->a, -8);
  EXPECT_EQ(ints->b, -16000);
  EXPECT_EQ(ints->c, -32000000);
  EXPECT_EQ(ints->d, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(ints->e, 250);
  EXPECT_EQ(ints->f, 65000);
  EXPECT_EQ(ints->g, 4000000000u);
  EXPECT_EQ(ints->h, std::numeric_limits<uint64_t>::max());

  auto fl = h.client.floats(-1.25f, std::numeric_limits<double>::infinity());
  ASSERT_TRUE(fl.isOk());
  EXPECT_EQ(fl->f, -1.25f);
  EXPECT_TRUE(std::isinf(fl->d));
  auto nan = h.client.floats(std::nanf(""), std::nan(""));
  ASSERT_TRUE(nan.isOk());
  EXPECT_TRUE(std::isnan(nan->f) && std::isnan(nan->d));

  auto e = h.client.enums(Mood::kAngry, base::Color::kGreen);
  ASSERT_TRUE(e.isOk());
  EXPECT_EQ(e->m, Mood::kAngry);
  EXPECT_EQ(e->c, base::Color::kGreen);

  Outer o = sampleOuter(7);
  auto out = h.client.outer(o);
  ASSERT_TRUE(out.isOk());
  expectSame(*out, o);

  EXPECT_TRUE(h.client.nothing().isOk());
  EXPECT_EQ(h.bound.channel->lastRequest.size(), 0u);  // no arguments: an empty frame
}

TEST(EveryType, HandlerErrorsReachTheCaller) {
  Harness<Scalars> h;
  EXPECT_TRUE(h.client.fail(0).isOk());
  Status app = h.client.fail(1);
  EXPECT_EQ(app.code(), Errc::kApplication);
  EXPECT_EQ(app.detail(), "failed on purpose");
  Status threw = h.client.fail(2);
  EXPECT_EQ(threw.code(), Errc::kServerFault);
  EXPECT_NE(threw.detail().find("Scalars.fail"), std::string::npos) << threw.detail();
  EXPECT_NE(threw.detail().find("boom"), std::string::npos) << threw.detail();
  Status odd = h.client.fail(3);
  EXPECT_EQ(odd.code(), Errc::kServerFault);
  EXPECT_NE(odd.detail().find("Scalars.fail"), std::string::npos);
}

TEST(EveryType, TextAndData) {
  Harness<Blobs> h;
  auto p = h.client.ping(41);
  ASSERT_TRUE(p.isOk());
  EXPECT_EQ(*p, 42u);

  for (const std::string& s : {std::string(), std::string("x"), std::string("hello, world"),
                               std::string("with\0nul", 8), std::string(1500, 'a'), std::string(100000, 'b')}) {
    auto r = h.client.text(s);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    EXPECT_EQ(*r, s);
  }
  std::vector<uint8_t> bytes(70000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7);
  for (size_t n : {size_t{0}, size_t{1}, size_t{9000}, bytes.size()}) {
    auto r = h.client.data(std::span<const uint8_t>(bytes.data(), n));
    ASSERT_TRUE(r.isOk());
    EXPECT_EQ(*r, std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<long>(n)));
  }
  // $Lrpc.inPlace: the handler gets the bytes where they arrived, the same bytes.
  for (size_t n : {size_t{0}, size_t{1}, size_t{9000}, bytes.size()}) {
    std::span<const uint8_t> in(bytes.data(), n);
    auto r = h.client.digest(in);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    EXPECT_EQ(r->n, n);
    EXPECT_EQ(r->hash, fnv1a(in));
  }
  // The tail layout: the Text at 0, the Data at the next 8-byte boundary.
  auto m = h.client.mixed(3, "abc", true, std::vector<uint8_t>{1, 2}, 100);
  ASSERT_TRUE(m.isOk()) << m.status().toString();
  EXPECT_EQ(m->count, 3u + 3u + 2u + 100u);
  EXPECT_EQ(m->t, "abc");
  EXPECT_EQ(m->d, (std::vector<uint8_t>{1, 2}));
  EXPECT_TRUE(m->flag);
  const auto& req = h.bound.channel->lastRequest;
  ASSERT_EQ(req.size(), 32u + 8u + 2u);
  VarRef d{};
  std::memcpy(&d, req.data() + 16, sizeof d);
  EXPECT_EQ(d.offset, 8u);
  EXPECT_EQ(d.length, 2u);
}

// Tails are reserved without zeroing (a large value would be written twice), in storage an
// earlier call may have left full of bytes (the double lends and reserves kStale bytes): the
// alignment gap between two values must still go out as zeros, both ways.
TEST(EveryType, TailGapsAreZeroedInReusedStorage) {
  Harness<Blobs> h;
  std::vector<std::byte> reply;
  h.bound.channel->tamperReply = [&](MessageBuffer& r) { reply.assign(r.data(), r.data() + r.size()); };
  const std::vector<uint8_t> d(600, 7);  // past the inline room, so the tail is lent storage
  auto m = h.client.mixed(3, "abc", true, d, 100);
  ASSERT_TRUE(m.isOk()) << m.status().toString();
  EXPECT_EQ(m->t, "abc");
  EXPECT_EQ(m->d, d);
  const ProcedureDescriptor& pd = Blobs::kDescriptor.procedures[Blobs::kMixed];
  const auto& req = h.bound.channel->lastRequest;
  ASSERT_EQ(req.size(), pd.argsSize + 8 + d.size());
  ASSERT_EQ(reply.size(), pd.resultsSize + 8 + d.size());
  for (size_t i = 3; i < 8; ++i) {
    EXPECT_EQ(req[pd.argsSize + i], std::byte{0}) << "request gap byte " << i;
    EXPECT_EQ(reply[pd.resultsSize + i], std::byte{0}) << "reply gap byte " << i;
  }
  EXPECT_EQ(std::count(req.begin(), req.end(), kStale), 0);
  EXPECT_EQ(std::count(reply.begin(), reply.end(), kStale), 0);
}

// A large argument is not copied into the request: the channel sends it from the caller's
// memory (RemoteCall::kBorrowBytes). Only the first such value of a call is borrowed; the
// server sees the same frame either way.
TEST(EveryType, LargeArgumentsAreBorrowedNotCopied) {
  Harness<Blobs> h;
  std::vector<uint8_t> big(RemoteCall::kBorrowBytes + 5);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 7 + 1);
  auto r = h.client.data(big);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_TRUE(h.bound.channel->lastBorrowed);
  EXPECT_EQ(*r, big);
  // Below the threshold it is copied as before.
  std::vector<uint8_t> small(RemoteCall::kBorrowBytes - 1, 3);
  r = h.client.data(small);
  ASSERT_TRUE(r.isOk());
  EXPECT_FALSE(h.bound.channel->lastBorrowed);
  EXPECT_EQ(*r, small);
  // Two large values: the first (the Text) is borrowed, the Data copied; both arrive intact.
  std::string text(RemoteCall::kBorrowBytes + 3, 'q');
  auto m = h.client.mixed(1, text, false, big, 2);
  ASSERT_TRUE(m.isOk()) << m.status().toString();
  EXPECT_TRUE(h.bound.channel->lastBorrowed);
  EXPECT_EQ(m->t, text);
  EXPECT_EQ(m->d, big);
  EXPECT_EQ(m->count, 1u + text.size() + big.size() + 2u);
}

// A Data result whose tail arrives apart from the frame (CallChannel::callApart, as the UDP
// client reassembles a large reply) becomes the caller's vector as it is, not a copy of it.
// Only a procedure whose sole variable-size result is Data asks for that, and the server's
// VarRef is checked against the apart tail like any other.
TEST(EveryType, DataResultArrivingApartIsNotCopied) {
  Harness<Blobs> h;
  InProcessChannel& ch = *h.bound.channel;
  ch.apartFrom = 1;
  for (size_t n : {size_t{1}, size_t{7}, size_t{1000}, size_t{1001}}) {
    std::vector<uint8_t> d(n);
    for (size_t i = 0; i < n; ++i) d[i] = static_cast<uint8_t>(i * 13 + 5);
    auto r = h.client.data(d);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    EXPECT_EQ(*r, d) << n;
    EXPECT_EQ(r->data(), ch.lastApart) << n << ": copied";
  }
  // Into the caller's vector (lrpc::Into): the tail arrives in that vector's storage.
  std::vector<uint8_t> into(2000, 0xEE);
  const uint8_t* storage = into.data();
  for (size_t n : {size_t{1001}, size_t{3}, size_t{2000}}) {
    std::vector<uint8_t> d(n, static_cast<uint8_t>(n));
    ASSERT_TRUE(h.client.data(d, lrpc::into(into)).isOk());
    EXPECT_EQ(into, d) << n;
    EXPECT_EQ(into.data(), storage) << n;
    EXPECT_EQ(ch.lastApart, storage) << n;
  }
  const int asked = ch.apartAsked;
  auto m = h.client.mixed(1, "t", true, std::vector<uint8_t>(50, 4), 2);  // a Text and a Data
  ASSERT_TRUE(m.isOk());
  EXPECT_EQ(m->d, std::vector<uint8_t>(50, 4));
  EXPECT_EQ(ch.apartAsked, asked) << "two variable-size results, yet asked for the tail apart";

  std::vector<uint8_t> d(64);
  for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<uint8_t>(i);
  auto setRef = [&](uint32_t offset, uint32_t length) {
    ch.tamperReply = [=](MessageBuffer& reply) {
      VarRef ref{offset, length};
      std::memcpy(reply.data(), &ref, sizeof ref);
    };
  };
  // A value that does not start the tail is moved to its start, in the same storage.
  setRef(8, 40);
  auto r = h.client.data(d);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(*r, std::vector<uint8_t>(d.begin() + 8, d.begin() + 48));
  EXPECT_EQ(r->data(), ch.lastApart);
  // A shorter value at the start takes the tail's storage, cut to its length.
  setRef(0, 10);
  r = h.client.data(d);
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(*r, std::vector<uint8_t>(d.begin(), d.begin() + 10));
  // A value past the apart tail is a bad frame, as ever.
  setRef(0, 65);
  r = h.client.data(d);
  EXPECT_EQ(r.status().code(), Errc::kBadFrame);
  // A channel that leaves tail bytes in the frame too is not trusted with either.
  ch.tamperReply = nullptr;
  ch.apartLeftover = 8;
  r = h.client.data(d);
  EXPECT_EQ(r.status().code(), Errc::kBadFrame);
  EXPECT_NE(r.status().detail().find("two places"), std::string::npos) << r.status().toString();
}

TEST(EveryType, MaxBytesIsEnforcedOnBothSides) {
  Harness<Blobs> h;
  auto ok = h.client.limited(std::string(16, 'x'));
  ASSERT_TRUE(ok.isOk());
  EXPECT_EQ(ok->size(), 16u);
  int before = h.bound.channel->calls;
  auto big = h.client.limited(std::string(17, 'x'));
  EXPECT_EQ(big.status().code(), Errc::kInvalidArgument);
  EXPECT_NE(big.status().detail().find("maxBytes(16)"), std::string::npos) << big.status().detail();
  EXPECT_EQ(h.bound.channel->calls, before);  // refused before sending
  // A handler's over-long result is the server's fault.
  auto grow = h.client.limited("grow");
  EXPECT_EQ(grow.status().code(), Errc::kServerFault);

  Harness<Lists> l;
  std::vector<uint64_t> eight(8, 1), nine(9, 1);
  EXPECT_TRUE(l.client.u64s(eight).isOk());
  EXPECT_EQ(l.client.u64s(nine).status().code(), Errc::kInvalidArgument);
  // List(Text): 8 bytes per element plus the elements.
  std::vector<std::string_view> two{"0123456789ab", "0123456789ab"};  // 16 + 24 = 40
  auto n = l.client.limitedTexts(two);
  ASSERT_TRUE(n.isOk());
  EXPECT_EQ(*n, 2u);
  std::vector<std::string_view> over{"0123456789abc", "0123456789ab"};
  EXPECT_EQ(l.client.limitedTexts(over).status().code(), Errc::kInvalidArgument);
}

TEST(EveryType, Lists) {
  Harness<Lists> h;
  for (size_t n : {size_t{0}, size_t{1}, size_t{3}, size_t{1000}}) {
    std::vector<int32_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<int32_t>(i * 31) - 7;
    auto r = h.client.ints(v);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    EXPECT_EQ(*r, v);

    bool flags[1000];
    for (size_t i = 0; i < n; ++i) flags[i] = i % 3 == 0;
    auto b = h.client.bools(std::span<const bool>(flags, n));
    ASSERT_TRUE(b.isOk());
    ASSERT_EQ(b->size(), n);
    for (size_t i = 0; i < n; ++i) EXPECT_EQ((*b)[i], flags[i]);

    std::vector<Mood> moods(n, Mood::kAngry);
    if (n) moods[0] = Mood::kCalm;
    auto m = h.client.moods(moods);
    ASSERT_TRUE(m.isOk());
    EXPECT_EQ(*m, moods);

    std::vector<Outer> outers;
    for (size_t i = 0; i < n && i < 50; ++i) outers.push_back(sampleOuter(static_cast<int>(i)));
    auto s = h.client.structs(outers);
    ASSERT_TRUE(s.isOk());
    ASSERT_EQ(s->size(), outers.size());
    for (size_t i = 0; i < outers.size(); ++i) expectSame((*s)[i], outers[i]);

    std::vector<std::string> owned;
    for (size_t i = 0; i < n; ++i) owned.push_back(std::string(i % 17, static_cast<char>('a' + i % 26)));
    std::vector<std::string_view> views(owned.begin(), owned.end());
    auto t = h.client.texts(views);
    ASSERT_TRUE(t.isOk()) << t.status().toString();
    EXPECT_EQ(*t, owned);

    std::vector<std::vector<uint8_t>> blobs;
    for (size_t i = 0; i < n; ++i) blobs.push_back(std::vector<uint8_t>(i % 5, static_cast<uint8_t>(i)));
    std::vector<std::span<const uint8_t>> spans(blobs.begin(), blobs.end());
    auto d = h.client.datas(spans);
    ASSERT_TRUE(d.isOk());
    EXPECT_EQ(*d, blobs);
  }
}

TEST(EveryType, EverythingThroughMultipleInheritance) {
  Harness<Everything> h;
  auto self = h.client.self();
  ASSERT_TRUE(self.isOk());
  EXPECT_EQ(*self, "Everything");
  auto p = h.client.ping(1);
  ASSERT_TRUE(p.isOk());
  EXPECT_EQ(*p, 2u);
  auto t = h.client.text(std::string(5000, 'z'));
  ASSERT_TRUE(t.isOk());
  EXPECT_EQ(t->size(), 5000u);
  auto i = h.client.ints(std::vector<int32_t>{1, 2, 3});
  ASSERT_TRUE(i.isOk());
  EXPECT_EQ(i->size(), 3u);
  auto e = h.client.echoBool(true);
  ASSERT_TRUE(e.isOk());
  EXPECT_TRUE(*e);
  EXPECT_EQ(h.impl.calls, 5);
}

TEST(EveryType, WithOptionsKeepsTheBinding) {
  Harness<Blobs> h;
  CallOptions o;
  o.timeout = std::chrono::milliseconds(5);
  auto c2 = h.client.withOptions(o);
  EXPECT_EQ(c2.binding(), h.client.binding());
  EXPECT_TRUE(c2.ping(1).isOk());
}

}  // namespace
}  // namespace lrpc::testing
