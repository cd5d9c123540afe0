// Nested values through the generated stubs in one process (the exact frame bytes a transport
// moves, InProcessChannel): every form round-trips, older and newer struct layouts read each
// other, and hostile frames (out of range, overflowing, cyclic, too deep, unknown union
// members, bytes named twice) are kBadFrame, never a crash.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "data_only.lrpc.h"
#include "tests/testing/in_process_channel.h"
#include "tests/types/types_impl.h"

namespace lrpc::testing {
namespace {

struct Bound {
  ContactsImpl contactsImpl;
  JsonImpl jsonImpl;
  InProcess<contacts::Contacts> c = bindInProcess<contacts::Contacts>(contactsImpl);
  InProcess<jsonv::Json> j = bindInProcess<jsonv::Json>(jsonImpl);
  contacts::Contacts::Client contacts{c.binding};
  jsonv::Json::Client json{j.binding};
};

TEST(NestedValues, EveryFormRoundTrips) {
  Bound b;
  checkNestedValues(b.contacts, b.json);
}

TEST(NestedValues, ViewsRoundTrip) {
  DirectoryImpl dirImpl;
  JsonImpl jsonImpl;
  auto d = bindInProcess<contacts::Directory>(dirImpl);
  auto j = bindInProcess<jsonv::Json>(jsonImpl);
  contacts::Directory::Client dir(d.binding);
  jsonv::Json::Client json(j.binding);
  checkViews(dir, json);
}

TEST(NestedValues, GenericStructsWithConcreteTypes) {
  GenericImpl impl;
  auto bound = bindInProcess<gen::Generic>(impl);
  gen::Generic::Client g(bound.binding);
  checkGenerics(g);
  // Each use is a type of its own, and differing uses make differing signatures.
  static_assert(!std::is_same_v<gen::Box<std::string>, gen::Box<gen::Point>>);
  EXPECT_NE(gen::Generic::kDescriptor.signatureHash, 0u);
}

TEST(NestedValues, DefaultsAreMemberInitializers) {
  contacts::Person p;
  EXPECT_EQ(p.age, 30u);
  EXPECT_EQ(p.address.city, "Springfield");
  EXPECT_EQ(p.nickname, "none");
  EXPECT_TRUE(p.verified);
  EXPECT_TRUE(p.employment.isUnemployed());
  EXPECT_EQ(contacts::Phone{}.kind, contacts::Phone::Kind::kMobile);
  dataonly::Config cfg;
  EXPECT_EQ(cfg.name, "default");
  EXPECT_EQ(cfg.retries, 3u);
  EXPECT_TRUE(cfg.mode.isFast());
  cfg.mode.setCareful(2);
  EXPECT_TRUE(cfg.mode.isCareful());
  EXPECT_EQ(cfg.mode.getCareful(), 2);
}

// No byte of the channel's stale storage (kStale) survives in a request: padding inside
// flattened structs, gaps between values and unused union slots are all written.
TEST(NestedValues, NoStaleByteLeavesTheClient) {
  Bound b;
  contacts::Person p = samplePerson("carol");
  p.photo = {1, 2, 3};
  ASSERT_TRUE(b.contacts.add(p).isOk());
  for (std::byte x : b.c.channel->lastRequest) EXPECT_NE(x, kStale);
}

// The arguments frame of Json.count for `t`, as the client stub writes it.
std::vector<std::byte> countFrame(Bound& b, const jsonv::Tree& t) {
  EXPECT_TRUE(b.json.count(t).isOk());
  return b.j.channel->lastRequest;
}

Status sendCount(Bound& b, std::vector<std::byte> frame) {
  b.j.channel->tamperRequest = [&](std::vector<std::byte>& req) { req = frame; };
  Status s = b.json.count(jsonv::Tree{}).status();
  b.j.channel->tamperRequest = nullptr;
  return s;
}

VarRef refAt(const std::vector<std::byte>& f, size_t at) {
  VarRef r;
  std::memcpy(&r, f.data() + at, sizeof r);
  return r;
}
void setRef(std::vector<std::byte>& f, size_t at, VarRef r) { std::memcpy(f.data() + at, &r, sizeof r); }

constexpr size_t kArgs = 8;  // Json.count's fixed part: one VarRef

TEST(NestedValues, OutOfRangeAndOverflowingRefsAreBadFrames) {
  Bound b;
  auto good = countFrame(b, jsonv::Tree{"root", {{"a", {}}, {"b", {}}}});
  ASSERT_TRUE(sendCount(b, good).isOk());
  const size_t tail = good.size() - kArgs;
  for (VarRef bad : {VarRef{static_cast<uint32_t>(tail), 16}, VarRef{0xfffffff8u, 16}, VarRef{0, 0xffffffffu},
                     VarRef{8, static_cast<uint32_t>(tail)}}) {
    auto f = good;
    setRef(f, 0, bad);
    EXPECT_EQ(sendCount(b, f), Errc::kBadFrame) << bad.offset << "+" << bad.length;
  }
  // The root's children list: its length not a whole number of VarRefs, then past the tail.
  const VarRef root = refAt(good, 0);
  const size_t children = kArgs + root.offset + 8;  // Tree: label @0, children @1
  auto f = good;
  VarRef list = refAt(f, children);
  setRef(f, children, VarRef{list.offset, list.length - 1});
  EXPECT_EQ(sendCount(b, f), Errc::kBadFrame);
  f = good;
  setRef(f, kArgs + list.offset, VarRef{static_cast<uint32_t>(tail) - 4, 16});
  EXPECT_EQ(sendCount(b, f), Errc::kBadFrame);
}

TEST(NestedValues, CyclesAndSharedBytesRunOutOfBudget) {
  Bound b;
  auto good = countFrame(b, jsonv::Tree{"root", {{"a", {}}}});
  const VarRef root = refAt(good, 0);
  const size_t children = kArgs + root.offset + 8;
  const VarRef list = refAt(good, children);
  // The only child is the root itself: a cycle.
  auto f = good;
  setRef(f, kArgs + list.offset, root);
  EXPECT_EQ(sendCount(b, f), Errc::kBadFrame);

  // A thousand children that all name the same subtree: far more bytes read than sent.
  jsonv::Tree wide{"root", std::vector<jsonv::Tree>(1000, jsonv::Tree{"x", {}})};
  wide.children[0] = jsonv::Tree{"big", std::vector<jsonv::Tree>(200, jsonv::Tree{"y", {}})};
  auto w = countFrame(b, wide);
  ASSERT_TRUE(sendCount(b, w).isOk());
  const VarRef wroot = refAt(w, 0);
  const VarRef wlist = refAt(w, kArgs + wroot.offset + 8);
  const VarRef first = refAt(w, kArgs + wlist.offset);
  for (uint32_t i = 1; i < 1000; ++i) setRef(w, kArgs + wlist.offset + 8 * i, first);
  EXPECT_EQ(sendCount(b, w), Errc::kBadFrame);
}

// Json.eval with a frame of our own: what the server computed, or why it refused.
Result<jsonv::Json::EvalResults> sendEval(Bound& b, std::vector<std::byte> frame) {
  b.j.channel->tamperRequest = [&](std::vector<std::byte>& req) { req = frame; };
  auto r = b.json.eval(literal(0));
  b.j.channel->tamperRequest = nullptr;
  return r;
}

// A boxed field (Expr.neg holds an Expr) is a struct VarRef, empty when its length is 0: one
// that names its holder is a cycle, one past the tail is out of range, even when empty.
TEST(NestedValues, BoxedFieldsAreCheckedLikeAnyStruct) {
  Bound b;
  ASSERT_TRUE(b.json.eval(negate(literal(3))).isOk());
  const auto good = b.j.channel->lastRequest;
  const size_t tail = good.size() - kArgs;
  const VarRef root = refAt(good, 0);
  // The root's neg: the VarRef in its fixed part that names another Expr after it.
  size_t neg = 0;
  for (size_t p = 0; p + sizeof(VarRef) <= root.length; p += 4) {
    const VarRef r = refAt(good, kArgs + root.offset + p);
    if (r.offset > root.offset && r.offset < tail && r.length == root.length) neg = kArgs + root.offset + p;
  }
  ASSERT_NE(neg, 0u);
  auto ok = sendEval(b, good);
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  EXPECT_EQ(ok->value, -3);

  auto f = good;
  setRef(f, neg, root);  // the Expr negates itself
  EXPECT_EQ(sendEval(b, f).status(), Errc::kBadFrame);
  f = good;
  setRef(f, neg, VarRef{static_cast<uint32_t>(tail) + 8, 0});
  EXPECT_EQ(sendEval(b, f).status(), Errc::kBadFrame);
  f = good;
  setRef(f, neg, VarRef{0, 0});  // empty: capnp's null pointer
  auto empty = sendEval(b, f);
  ASSERT_TRUE(empty.isOk()) << empty.status().toString();
  EXPECT_EQ(empty->value, 0);
  EXPECT_TRUE(empty->e.isNeg());
  EXPECT_FALSE(empty->e.getNeg().has());
}

TEST(NestedValues, NestingDeeperThanTheLimit) {
  Bound b;
  // A struct and a list each take one level: a chain of n trees nests 2n - 1 deep.
  auto ok = b.json.count(chain(static_cast<int>(codec::kMaxDepth / 2)));
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  EXPECT_EQ(ok->depth, codec::kMaxDepth / 2);
  // The client refuses what the server would, and its size walk stops at the limit.
  EXPECT_EQ(b.json.count(chain(static_cast<int>(codec::kMaxDepth))).status(), Errc::kInvalidArgument);
  EXPECT_EQ(b.json.count(chain(5000)).status(), Errc::kInvalidArgument);
  // $Lrpc.maxDepth(8) on Json.shallow, on both sides.
  auto four = b.json.shallow(chain(4));
  ASSERT_TRUE(four.isOk()) << four.status().toString();
  EXPECT_EQ(*four, 4u);
  EXPECT_EQ(b.json.shallow(chain(5)).status(), Errc::kInvalidArgument);
  // A hostile client's frame past the server's limit: count's frame (limit 64) for a chain of
  // 10 (19 levels), sent as shallow (limit 8), whose arguments have the same layout.
  auto deep = countFrame(b, chain(10));
  b.j.channel->tamperRequest = [&](std::vector<std::byte>& req) { req = deep; };
  EXPECT_EQ(b.json.shallow(jsonv::Tree{}).status(), Errc::kBadFrame);
  b.j.channel->tamperRequest = nullptr;
  // A handler's result past the limit: the server refuses to send it.
  EXPECT_EQ(b.json.deepen(codec::kMaxDepth).status(), Errc::kServerFault);
}

// A handler of views reads the same frames under the same checks: Json.countView, echoView and
// evalView take the arguments of count, echo and eval, byte for byte.
TEST(NestedValues, HostileFramesToViewsAreBadFrames) {
  Bound b;
  auto sendAs = [&](std::vector<std::byte> frame, auto call) {
    b.j.channel->tamperRequest = [&](std::vector<std::byte>& req) { req = frame; };
    Status st = call();
    b.j.channel->tamperRequest = nullptr;
    return st;
  };
  auto countView = [&] { return b.json.countView(jsonv::Tree::View{}).status(); };
  auto good = countFrame(b, jsonv::Tree{"root", {{"a", {}}, {"b", {}}}});
  ASSERT_TRUE(sendAs(good, countView).isOk());
  const size_t tail = good.size() - kArgs;
  for (VarRef bad : {VarRef{static_cast<uint32_t>(tail), 16}, VarRef{0xfffffff8u, 16}, VarRef{0, 0xffffffffu}}) {
    auto f = good;
    setRef(f, 0, bad);
    EXPECT_EQ(sendAs(f, countView), Errc::kBadFrame) << bad.offset << "+" << bad.length;
  }
  // The only child is the root itself: a cycle, which runs out of budget.
  const VarRef root = refAt(good, 0);
  const VarRef list = refAt(good, kArgs + root.offset + 8);
  auto cyc = good;
  setRef(cyc, kArgs + list.offset, root);
  EXPECT_EQ(sendAs(cyc, countView), Errc::kBadFrame);
  // Deeper than countView's $Lrpc.maxDepth(8).
  EXPECT_EQ(sendAs(countFrame(b, chain(10)), countView), Errc::kBadFrame);
  auto four = sendAs(countFrame(b, chain(4)), countView);
  EXPECT_TRUE(four.isOk()) << four.toString();

  // An unknown union member.
  jsonv::Value v;
  v.setNumber(2.5);
  ASSERT_TRUE(b.json.echo(v).isOk());
  auto e = b.j.channel->lastRequest;
  const uint16_t unknown = 6;
  std::memcpy(e.data() + kArgs + refAt(e, 0).offset, &unknown, sizeof unknown);
  EXPECT_EQ(sendAs(e, [&] { return b.json.echoView(jsonv::Value::View{}).status(); }), Errc::kBadFrame);

  // A Box that names its holder.
  ASSERT_TRUE(b.json.eval(negate(literal(3))).isOk());
  auto x = b.j.channel->lastRequest;
  const VarRef xroot = refAt(x, 0);
  size_t neg = 0;
  for (size_t p = 0; p + sizeof(VarRef) <= xroot.length; p += 4) {
    const VarRef r = refAt(x, kArgs + xroot.offset + p);
    if (r.offset > xroot.offset && r.offset < x.size() - kArgs && r.length == xroot.length) neg = kArgs + xroot.offset + p;
  }
  ASSERT_NE(neg, 0u);
  auto evalView = [&] { return b.json.evalView(jsonv::Expr::View{}).status(); };
  EXPECT_TRUE(sendAs(x, evalView).isOk());
  setRef(x, neg, xroot);
  EXPECT_EQ(sendAs(x, evalView), Errc::kBadFrame);
}

// What a view cannot point at in place is copied: Bool bytes that are not 0 or 1 (a bool
// holding 2 is undefined behaviour) and a list a hostile writer misaligned.
TEST(NestedValues, ViewsOfOddBytesAreCopiedNotRefused) {
  DirectoryImpl impl;
  auto bound = bindInProcess<contacts::Directory>(impl);
  contacts::Directory::Client d(bound.binding);
  const bool bits[] = {true, false};
  const int32_t nums[] = {7, 8};
  ASSERT_TRUE(d.add({}, {}, {}, nums, bits, {}, "").isOk());
  auto f = bound.channel->lastRequest;
  using Frame = contacts::Directory::AddArgsFrame;
  constexpr size_t kNums = offsetof(Frame, nums), kBits = offsetof(Frame, bits), kFixed = sizeof(Frame);
  const VarRef bitsRef = refAt(f, kBits);
  ASSERT_EQ(bitsRef.length, 2u);
  f[kFixed + bitsRef.offset] = std::byte{2};
  // The two numbers again, one byte past an 8-aligned end of the tail.
  const uint32_t at = static_cast<uint32_t>(codec::align8(f.size() - kFixed)) + 1;
  f.resize(kFixed + at + 8, std::byte{0});
  const int32_t moved[] = {-1, 65536};
  std::memcpy(f.data() + kFixed + at, moved, sizeof moved);
  setRef(f, kNums, VarRef{at, 8});
  bound.channel->tamperRequest = [&](std::vector<std::byte>& req) { req = f; };
  auto r = d.add({}, {}, {}, nums, bits, {}, "");
  bound.channel->tamperRequest = nullptr;
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->digest, "|0:|-1,65536,|10||");
}

// Json.echo's fixed part: the Value's VarRef; a Value's discriminant sits first in its own.
TEST(NestedValues, UnknownUnionMemberIsABadFrame) {
  Bound b;
  jsonv::Value v;
  v.setNumber(2.5);
  ASSERT_TRUE(b.json.echo(v).isOk());
  auto f = b.j.channel->lastRequest;
  const VarRef root = refAt(f, 0);
  const uint16_t unknown = 6;
  std::memcpy(f.data() + kArgs + root.offset, &unknown, sizeof unknown);
  b.j.channel->tamperRequest = [&](std::vector<std::byte>& req) { req = f; };
  EXPECT_EQ(b.json.echo(v).status(), Errc::kBadFrame);
}

// A struct's VarRef carries its fixed part's size: a reader defaults what a shorter (older)
// writer did not send, and skips what a longer (newer) one sent beyond what it knows.
TEST(NestedValues, OlderAndNewerStructLayoutsReadEachOther) {
  Bound b;
  contacts::Person p = samplePerson("dave");
  ASSERT_TRUE(b.contacts.add(p).isOk());
  const auto sent = b.c.channel->lastRequest;
  const VarRef person = refAt(sent, 0);
  // Older: only the first 16 bytes (name, emails) of Person's fixed part.
  auto older = sent;
  setRef(older, 0, VarRef{person.offset, 16});
  b.c.channel->tamperRequest = [&](std::vector<std::byte>& req) { req = older; };
  auto id = b.contacts.add(p);
  ASSERT_TRUE(id.isOk()) << id.status().toString();
  b.c.channel->tamperRequest = nullptr;
  auto got = b.contacts.get(*id);
  ASSERT_TRUE(got.isOk());
  const contacts::Person& o = got->getFound();
  EXPECT_EQ(o.name, p.name);
  EXPECT_EQ(o.emails, p.emails);
  EXPECT_EQ(o.age, 30u);  // the schema's default, not the 41 that was not sent
  EXPECT_TRUE(o.photo.empty());
  EXPECT_EQ(o.address.city, "Springfield");
  EXPECT_TRUE(o.verified);
  // Newer: 64 more bytes after the fixed part (zeros, as an unknown later field), moved to
  // the end of the tail so that nothing else moves.
  auto newer = sent;
  const uint32_t at = static_cast<uint32_t>(codec::align8(newer.size() - kArgs));
  const uint32_t head = contacts::lrpcHead(p);
  newer.resize(kArgs + at + head + 64, std::byte{0});
  std::memcpy(newer.data() + kArgs + at, sent.data() + kArgs + person.offset, head);
  setRef(newer, 0, VarRef{at, head + 64});
  b.c.channel->tamperRequest = [&](std::vector<std::byte>& req) { req = newer; };
  id = b.contacts.add(p);
  ASSERT_TRUE(id.isOk()) << id.status().toString();
  b.c.channel->tamperRequest = nullptr;
  EXPECT_EQ(b.contacts.get(*id)->getFound(), p);
}

// A struct named by an empty VarRef in an empty tail: every field keeps its default (an older
// writer that knew none of them), with no read of the tail at all.
TEST(NestedValues, AnEmptyStructIsAllDefaults) {
  Bound b;
  b.j.channel->tamperRequest = [](std::vector<std::byte>& req) { req.assign(kArgs, std::byte{0}); };
  jsonv::Value v;
  v.setString("not sent");
  auto r = b.json.echo(v);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_TRUE(r->isNull());
}

// The client checks the server's results as the server checks arguments.
TEST(NestedValues, HostileResultsAreBadFramesOnTheClient) {
  Bound b;
  b.j.channel->tamperReply = [](MessageBuffer& reply) {
    VarRef r{0, 0xfffffff0u};
    std::memcpy(reply.data(), &r, sizeof r);
  };
  jsonv::Value v;
  v.setString("x");
  EXPECT_EQ(b.json.echo(v).status(), Errc::kBadFrame);
}

}  // namespace
}  // namespace lrpc::testing
