// Servers of the schemas in this folder, and the checks both paths run against them: every
// kind of nested value goes out as an argument and comes back as a result.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "contacts.lrpc.h"
#include "generic.lrpc.h"
#include "json_value.lrpc.h"
#include "runtime/codec_view.h"  // lrpc::viewOf, lrpc::ownedOf, lrpc::ViewArena

namespace lrpc::testing {

class ContactsImpl final : public contacts::Contacts::Server {
 public:
  Result<uint32_t> add(const contacts::Person& person) override {
    people_[next_] = person;
    return next_++;
  }
  Result<contacts::Lookup> get(uint32_t id) override {
    contacts::Lookup out;
    if (auto it = people_.find(id); it != people_.end()) {
      out.setFound(it->second);
    } else {
      out.initMissing() = contacts::Error{404, "no contact " + std::to_string(id)};
    }
    return out;
  }
  Result<contacts::Contacts::FindAllResults> findAll(std::span<const std::string_view> names) override {
    contacts::Contacts::FindAllResults out{};
    for (auto name : names) {
      for (const auto& [id, p] : people_) {
        if (p.name == name) out.people.push_back(p);
      }
    }
    out.count = static_cast<uint32_t>(out.people.size());
    return out;
  }
  Result<contacts::Contacts::ShapesResults> shapes(std::span<const contacts::Shape> shapes) override {
    contacts::Contacts::ShapesResults out{};
    for (auto it = shapes.rbegin(); it != shapes.rend(); ++it) {
      out.shapes.push_back(*it);
      out.total += it->area;
    }
    return out;
  }
  Result<contacts::Contacts::MatrixResults> matrix(std::span<const std::vector<int32_t>> m,
                                                   std::span<const std::vector<std::string>> words) override {
    contacts::Contacts::MatrixResults out{};
    for (const auto& row : m) {
      out.m.push_back(row);
      for (auto& v : out.m.back()) v = static_cast<int32_t>(static_cast<uint32_t>(v) * 2u);  // wraps: a peer picks v
    }
    out.words.assign(words.begin(), words.end());
    return out;
  }
  Status rename(uint32_t id, std::string_view name) override {
    auto it = people_.find(id);
    if (it == people_.end()) return Status(Errc::kNotFound, "no contact");
    it->second.name = std::string(name);
    return {};
  }

 private:
  std::map<uint32_t, contacts::Person> people_;
  uint32_t next_ = 1;
};

class JsonImpl final : public jsonv::Json::Server {
 public:
  Result<jsonv::Value> echo(const jsonv::Value& v) override { return v; }
  Result<jsonv::Json::CountResults> count(const jsonv::Tree& t) override {
    jsonv::Json::CountResults out{};
    out.depth = walk(t, 1, out.nodes);
    out.t = t;
    return out;
  }
  Result<jsonv::Tree> deepen(uint32_t levels) override;
  Result<uint32_t> shallow(const jsonv::Tree& t) override {
    uint32_t nodes = 0;
    walk(t, 1, nodes);
    return nodes;
  }
  Result<jsonv::Json::EvalResults> eval(const jsonv::Expr& e) override { return jsonv::Json::EvalResults{value(e), e}; }
  Result<jsonv::Value> echoView(const jsonv::Value::View& v) override { return ownedOf(v); }
  Result<int64_t> evalView(const jsonv::Expr::View& e) override { return viewValue(e); }
  Result<uint32_t> countView(const jsonv::Tree::View& t) override { return viewNodes(t); }

 private:
  static uint32_t walk(const jsonv::Tree& t, uint32_t depth, uint32_t& nodes) {
    ++nodes;
    uint32_t deepest = depth;
    for (const auto& c : t.children) deepest = std::max(deepest, walk(c, depth + 1, nodes));
    return deepest;
  }
  // A peer picks the literals: the arithmetic wraps (two's complement) instead of overflowing.
  static int64_t wrapAdd(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  }
  static int64_t wrapNeg(int64_t a) { return static_cast<int64_t>(0 - static_cast<uint64_t>(a)); }
  // The same walks over views: a BoxView and a span of views are read like a Box and a vector.
  static int64_t viewValue(const BoxView<jsonv::Expr::View>& e) { return e ? viewValue(*e) : 0; }
  static int64_t viewValue(const jsonv::Expr::View& e) {
    switch (e.which()) {
      case jsonv::Expr::Which::kLiteral: return e.getLiteral();
      case jsonv::Expr::Which::kNeg: return wrapNeg(viewValue(e.getNeg()));
      case jsonv::Expr::Which::kSum:
        return e.getSum() ? wrapAdd(viewValue(e.getSum()->left), viewValue(e.getSum()->right)) : 0;
    }
    return 0;
  }
  static uint32_t viewNodes(const jsonv::Tree::View& t) {
    uint32_t n = 1;
    for (const auto& c : t.children) n += viewNodes(c);
    return n;
  }
  static int64_t value(const Box<jsonv::Expr>& e) { return e ? value(*e) : 0; }
  static int64_t value(const jsonv::Expr& e) {
    switch (e.which()) {
      case jsonv::Expr::Which::kLiteral: return e.getLiteral();
      case jsonv::Expr::Which::kNeg: return wrapNeg(value(e.getNeg()));
      case jsonv::Expr::Which::kSum: return e.getSum() ? wrapAdd(value(e.getSum()->left), value(e.getSum()->right)) : 0;
    }
    return 0;
  }
};

class GenericImpl final : public gen::Generic::Server {
 public:
  Result<gen::Generic::BoxesResults> boxes(const gen::Box<std::string>& text, const gen::Box<std::vector<uint8_t>>& data,
                                           const gen::Box<gen::Point>& point) override {
    gen::Generic::BoxesResults out{};
    out.text = text;
    out.text.value += "+" + std::to_string(data.value.size());
    out.point = point;
    out.point.value.x = static_cast<int32_t>(static_cast<uint32_t>(out.point.value.x) + 1u);  // wraps, as above
    return out;
  }
  Result<gen::Pair<std::string, gen::Box<std::string>>> pair(const gen::Pair<std::string, gen::Box<std::string>>& p) override {
    return gen::Pair<std::string, gen::Box<std::string>>{p.second.value, {p.first, p.second.label}};
  }
  Result<gen::Result<gen::Point, gen::Problem>> parse(std::string_view input) override {
    gen::Result<gen::Point, gen::Problem> r;
    const size_t comma = input.find(',');
    if (comma == std::string_view::npos) {
      r.setErr({400, "no comma in '" + std::string(input) + "'"});
    } else {
      r.setOk({std::stoi(std::string(input.substr(0, comma))), std::stoi(std::string(input.substr(comma + 1)))});
    }
    return r;
  }
  Result<gen::Generic::HoldResults> hold(const gen::Holder& h) override {
    gen::Generic::HoldResults out{};
    out.h = h;
    for (const auto& n : h.names.value) out.all.push_back({n, h.names.label});
    return out;
  }
};

// Directory takes Contacts' kinds of argument as views ($Lrpc.views): it answers with owning
// copies of what it read (lrpc::ownedOf) and a digest of the flat ones.
class DirectoryImpl final : public contacts::Directory::Server {
 public:
  Result<contacts::Directory::AddResults> add(const contacts::Person::View& person, std::span<const std::string_view> tags,
                                              std::span<const uint8_t> photo, std::span<const int32_t> nums,
                                              std::span<const bool> bits, std::span<const contacts::Flags> flags,
                                              std::string_view note) override {
    contacts::Directory::AddResults out{};
    out.echo = ownedOf(person);
    for (auto t : tags) out.digest += std::string(t) + ",";
    out.digest += "|" + std::to_string(photo.size()) + ":";
    for (uint8_t b : photo) out.digest += std::to_string(b) + ".";
    out.digest += "|";
    for (int32_t n : nums) out.digest += std::to_string(n) + ",";
    out.digest += "|";
    for (bool b : bits) out.digest += b ? '1' : '0';
    out.digest += "|";
    for (const auto& f : flags) out.digest += std::to_string(f.on) + "/" + std::to_string(f.level) + "/" + std::to_string(f.mask) + ",";
    out.digest += "|" + std::string(note);
    return out;
  }
  Result<contacts::Directory::ShapesResults> shapes(std::span<const contacts::Shape::View> shapes,
                                                    std::span<const std::span<const int32_t>> m,
                                                    const contacts::Lookup::View& lookup,
                                                    std::span<const std::span<const std::string_view>> words) override {
    contacts::Directory::ShapesResults out{};
    out.shapes = ownedOf(shapes);
    out.m = ownedOf(m);
    out.lookup = ownedOf(lookup);
    out.words = ownedOf(words);
    return out;
  }
  Result<uint32_t> none(uint32_t id) override { return id; }
};

inline contacts::Person samplePerson(const std::string& name) {
  contacts::Person p;
  p.name = name;
  p.emails = {name + "@example.org", "", std::string(300, 'e')};
  p.age = 41;
  p.phones = {{"+1 555 0100", contacts::Phone::Kind::kWork}, {"", contacts::Phone::Kind::kHome}};
  p.photo = {1, 2, 3, 0, 255};
  p.home = {-3, 7};
  p.flags = {{true, 9, 0x0102030405060708ull}, {false, 0, 0}};
  p.address.street = "742 Evergreen Terrace";
  p.employment.setEmployer("Power Plant");
  p.nickname = "";
  p.scores = {{1, 2, 3}, {}, {-4}};
  p.verified = false;
  return p;
}

inline jsonv::Value sampleJson(int depth) {
  jsonv::Value v;
  if (depth == 0) {
    v.setString("leaf");
    return v;
  }
  jsonv::Value n;
  n.setNumber(depth * 1.5);
  jsonv::Value b;
  b.setBoolean(depth % 2 == 0);
  jsonv::Value null;
  null.setNull();
  std::vector<jsonv::Value> items{n, b, null, sampleJson(depth - 1)};
  jsonv::Value arr;
  arr.setArray(items);
  v.setObject({jsonv::Value::Field{"items", arr}, jsonv::Value::Field{"child", sampleJson(depth - 1)}});
  return v;
}

inline jsonv::Tree chain(int depth) {
  jsonv::Tree t{"n" + std::to_string(depth), {}};
  if (depth > 1) t.children.push_back(chain(depth - 1));
  return t;
}

inline Result<jsonv::Tree> JsonImpl::deepen(uint32_t levels) {
  if (levels > 1000) return Status(Errc::kInvalidArgument, "at most 1000 levels");  // chain() recurses
  return chain(static_cast<int>(levels));
}

inline jsonv::Expr literal(int64_t v) {
  jsonv::Expr e;
  e.setLiteral(v);
  return e;
}
inline jsonv::Expr negate(Box<jsonv::Expr> x) {
  jsonv::Expr e;
  e.setNeg(std::move(x));
  return e;
}
inline jsonv::Expr add(Box<jsonv::Expr> left, Box<jsonv::Expr> right) {
  jsonv::Expr e;
  e.setSum(jsonv::Sum{std::move(left), std::move(right)});
  return e;
}

// Every method of Generic: generic structs used with concrete types, nested in each other.
inline void checkGenerics(gen::Generic::Client& g) {
  gen::Box<std::string> text{"hello", "t"};
  gen::Box<std::vector<uint8_t>> data{{1, 2, 3}, "d"};
  gen::Box<gen::Point> point{{4, 5}, "p"};
  auto b = g.boxes(text, data, point);
  ASSERT_TRUE(b.isOk()) << b.status().toString();
  EXPECT_EQ(b->text, (gen::Box<std::string>{"hello+3", "t"}));
  EXPECT_EQ(b->point, (gen::Box<gen::Point>{{5, 5}, "p"}));

  gen::Pair<std::string, gen::Box<std::string>> p{"one", {"two", "three"}};
  auto swapped = g.pair(p);
  ASSERT_TRUE(swapped.isOk()) << swapped.status().toString();
  EXPECT_EQ(*swapped, (gen::Pair<std::string, gen::Box<std::string>>{"two", {"one", "three"}}));

  auto ok = g.parse("3,-4");
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  ASSERT_TRUE(ok->isOk());
  EXPECT_EQ(ok->getOk(), (gen::Point{3, -4}));
  auto err = g.parse("nope");
  ASSERT_TRUE(err.isOk()) << err.status().toString();
  ASSERT_TRUE(err->isErr());
  EXPECT_EQ(err->getErr().code, 400);
  EXPECT_EQ(err->getErr().why, "no comma in 'nope'");

  gen::Holder h;
  h.names = {{"a", "b", ""}, "names"};
  h.where = {{1, 2}, {"here", "w"}};
  auto held = g.hold(h);
  ASSERT_TRUE(held.isOk()) << held.status().toString();
  EXPECT_EQ(held->h, h);
  ASSERT_EQ(held->all.size(), 3u);
  EXPECT_EQ(held->all[1], (gen::Box<std::string>{"b", "names"}));
}

// Every method of Contacts and Json, with every nested form, through `c` and `j`.
inline void checkNestedValues(contacts::Contacts::Client& c, jsonv::Json::Client& j) {
  contacts::Person alice = samplePerson("alice");
  auto id = c.add(alice);
  ASSERT_TRUE(id.isOk()) << id.status().toString();
  contacts::Person bob;  // every default, nothing set
  bob.name = "bob";
  auto bobId = c.add(bob);
  ASSERT_TRUE(bobId.isOk()) << bobId.status().toString();

  auto got = c.get(*id);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  ASSERT_TRUE(got->isFound());
  EXPECT_EQ(got->getFound(), alice);
  EXPECT_EQ(got->getFound().employment.getEmployer(), "Power Plant");

  auto gotBob = c.get(*bobId);
  ASSERT_TRUE(gotBob.isOk());
  const contacts::Person& b = gotBob->getFound();
  EXPECT_EQ(b.age, 30u);
  EXPECT_EQ(b.address.city, "Springfield");
  EXPECT_EQ(b.nickname, "none");
  EXPECT_TRUE(b.verified);
  EXPECT_TRUE(b.employment.isUnemployed());

  // Either side of codec::TailCopy's limit: a small tail is decoded from one bulk copy, a
  // larger one in place; both ways, arguments and results.
  for (size_t n : {size_t{300}, codec::TailCopy::kMaxBytes, codec::TailCopy::kMaxBytes + 1, size_t{64 * 1024}}) {
    const contacts::Person big = samplePerson(std::string(n, 'x'));
    auto bigId = c.add(big);
    ASSERT_TRUE(bigId.isOk()) << n << ": " << bigId.status().toString();
    auto back = c.get(*bigId);
    ASSERT_TRUE(back.isOk()) << n << ": " << back.status().toString();
    ASSERT_TRUE(back->isFound());
    EXPECT_EQ(back->getFound(), big) << n;
  }

  auto missing = c.get(999);
  ASSERT_TRUE(missing.isOk());
  ASSERT_TRUE(missing->isMissing());
  EXPECT_EQ(missing->getMissing().code, 404);
  EXPECT_EQ(missing->getMissing().message, "no contact 999");

  std::vector<std::string_view> names{"alice", "nobody", "bob"};
  auto all = c.findAll(names);
  ASSERT_TRUE(all.isOk()) << all.status().toString();
  ASSERT_EQ(all->count, 2u);
  ASSERT_EQ(all->people.size(), 2u);
  EXPECT_EQ(all->people[0], alice);
  EXPECT_EQ(all->people[1].name, "bob");

  ASSERT_TRUE(c.rename(*bobId).isOk());  // the schema's default argument
  EXPECT_EQ(c.get(*bobId)->getFound().name, "anonymous");

  std::vector<contacts::Shape> shapes(4);
  shapes[0].area = 3.0;
  shapes[0].setCircle(1.0);
  shapes[1].area = 4.0;
  shapes[1].setSquare({2, 2});
  shapes[2].area = 0.5;
  shapes[2].setPolygon({{0, 0}, {1, 0}, {0, 1}});
  shapes[3].setEmpty();
  auto s = c.shapes(shapes);
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  ASSERT_EQ(s->shapes.size(), 4u);
  EXPECT_DOUBLE_EQ(s->total, 7.5);
  EXPECT_TRUE(s->shapes[0].isEmpty());
  EXPECT_EQ(s->shapes[1].getPolygon().size(), 3u);
  EXPECT_EQ(s->shapes[2].getSquare(), (contacts::Point{2, 2}));
  EXPECT_DOUBLE_EQ(s->shapes[3].getCircle(), 1.0);

  std::vector<std::vector<int32_t>> m{{1, 2}, {}, {3}};
  std::vector<std::vector<std::string>> words{{"a", "bc"}, {}, {""}};
  auto mx = c.matrix(m, words);
  ASSERT_TRUE(mx.isOk()) << mx.status().toString();
  EXPECT_EQ(mx->m, (std::vector<std::vector<int32_t>>{{2, 4}, {}, {6}}));
  EXPECT_EQ(mx->words, words);

  jsonv::Value v = sampleJson(6);
  auto e = j.echo(v);
  ASSERT_TRUE(e.isOk()) << e.status().toString();
  EXPECT_EQ(*e, v);

  jsonv::Tree t{"root", {chain(5), chain(2), {"leaf", {}}}};
  auto n = j.count(t);
  ASSERT_TRUE(n.isOk()) << n.status().toString();
  EXPECT_EQ(n->nodes, 1u + 5u + 2u + 1u);
  EXPECT_EQ(n->depth, 6u);
  EXPECT_EQ(n->t, t);

  // Nesting past the limit: refused by the writer (the client for arguments, the server for a
  // handler's result) before anything is sent.
  EXPECT_EQ(j.count(chain(static_cast<int>(codec::kMaxDepth))).status(), Errc::kInvalidArgument);
  auto deep = j.deepen(codec::kMaxDepth / 2);
  ASSERT_TRUE(deep.isOk()) << deep.status().toString();
  EXPECT_EQ(*deep, chain(static_cast<int>(codec::kMaxDepth / 2)));
  EXPECT_EQ(j.deepen(codec::kMaxDepth).status(), Errc::kServerFault);

  // Structs that hold each other by value (Expr and Sum): every Box full or empty, both ways.
  const jsonv::Expr x = add(negate(literal(5)), add(literal(7), {}));
  auto r = j.eval(x);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->value, 2);
  EXPECT_EQ(r->e, x);
  EXPECT_FALSE(r->e.getSum()->right->getSum()->right.has());
  auto empty = j.eval(add({}, {}));
  ASSERT_TRUE(empty.isOk()) << empty.status().toString();
  EXPECT_EQ(empty->value, 0);
  EXPECT_FALSE(empty->e.getSum()->left.has());
  jsonv::Expr deepExpr = literal(1);
  for (uint32_t i = 0; i < codec::kMaxDepth; ++i) deepExpr = negate(std::move(deepExpr));
  EXPECT_EQ(j.eval(deepExpr).status(), Errc::kInvalidArgument);  // one level per Expr: past the limit
}

// Every method of Directory and Json's view methods ($Lrpc.views): values built as views with
// no owning container, views of owning values, defaults, and the limits a view reader keeps.
inline void checkViews(contacts::Directory::Client& d, jsonv::Json::Client& j) {
  // Built from the caller's own storage: arrays and literals, no std::string or std::vector.
  const std::string_view emails[] = {"carol@example.org", ""};
  const contacts::Phone::View phones[] = {{"+44 20 7946 0000", contacts::Phone::Kind::kHome}, {"", contacts::Phone::Kind::kMobile}};
  const int32_t row0[] = {5, -6};
  const std::span<const int32_t> scores[] = {row0, {}};
  const uint8_t photo[] = {9, 0, 255};
  const contacts::Flags flags[] = {{true, 3, 0xfedcba9876543210ull}};
  contacts::Person::View carol;
  carol.name = "carol";
  carol.emails = emails;
  carol.phones = phones;
  carol.photo = photo;
  carol.home = {10, -10};
  carol.flags = flags;
  carol.address.street = "1 Main St";
  carol.employment.setSchool("Springfield Elementary");
  carol.scores = scores;
  const std::string_view tags[] = {"x", "", "yz"};
  const int32_t nums[] = {1, -2, 2147483647};
  const bool bits[] = {true, false, true};
  const contacts::Flags flagArgs[] = {{false, 255, 1}, {true, 0, 0}};
  auto added = d.add(carol, tags, photo, nums, bits, flagArgs, "short note");
  ASSERT_TRUE(added.isOk()) << added.status().toString();
  contacts::Person expected;
  expected.name = "carol";
  expected.emails = {"carol@example.org", ""};
  expected.phones = {{"+44 20 7946 0000", contacts::Phone::Kind::kHome}, {"", contacts::Phone::Kind::kMobile}};
  expected.photo = {9, 0, 255};
  expected.home = {10, -10};
  expected.flags = {{true, 3, 0xfedcba9876543210ull}};
  expected.address.street = "1 Main St";
  expected.employment.setSchool("Springfield Elementary");
  expected.scores = {{5, -6}, {}};
  EXPECT_EQ(added->echo, expected);
  EXPECT_EQ(added->digest, "x,,yz,|3:9.0.255.|1,-2,2147483647,|101|0/255/1,1/0/0,|short note");

  // A view of an owning value, and a view left at its defaults (which are the schema's).
  {
    ViewArena arena;
    const contacts::Person alice = samplePerson("alice");
    auto again = d.add(viewOf(alice, arena), {}, {}, {}, {}, {}, "");
    ASSERT_TRUE(again.isOk()) << again.status().toString();
    EXPECT_EQ(again->echo, alice);
    EXPECT_EQ(again->digest, "|0:||||");
    auto defaults = d.add(contacts::Person::View{}, {}, {}, {}, {}, {}, "");
    ASSERT_TRUE(defaults.isOk()) << defaults.status().toString();
    EXPECT_EQ(defaults->echo, contacts::Person{});
  }
  // $Lrpc.maxBytes(16) holds for a view as for a copy: refused by the client before sending.
  EXPECT_EQ(d.add(carol, {}, {}, {}, {}, {}, "seventeen bytes!!").status(), Errc::kInvalidArgument);

  std::vector<contacts::Shape> shapes(3);
  shapes[0].area = 1.0;
  shapes[0].setPolygon({{0, 0}, {1, 1}});
  shapes[1].setSquare({3, 4});
  shapes[2].setEmpty();
  contacts::Lookup lookup;
  lookup.setFound(samplePerson("dave"));
  const std::vector<std::vector<int32_t>> m{{1}, {}, {2, 3}};
  const std::vector<std::vector<std::string>> words{{"a", ""}, {}, {"bc"}};
  ViewArena arena;
  auto sh = d.shapes(viewOf(shapes, arena), viewOf(m, arena), viewOf(lookup, arena), viewOf(words, arena));
  ASSERT_TRUE(sh.isOk()) << sh.status().toString();
  EXPECT_EQ(sh->shapes, shapes);
  EXPECT_EQ(sh->m, m);
  EXPECT_EQ(sh->lookup, lookup);
  EXPECT_EQ(sh->words, words);
  contacts::Lookup missing;
  missing.initMissing() = contacts::Error{7, "gone"};
  auto sh2 = d.shapes({}, {}, viewOf(missing, arena), {});
  ASSERT_TRUE(sh2.isOk()) << sh2.status().toString();
  EXPECT_EQ(sh2->lookup, missing);
  EXPECT_TRUE(sh2->shapes.empty());
  ASSERT_TRUE(d.none(4).isOk());
  EXPECT_EQ(*d.none(4), 4u);

  // Recursion through Lists and through Boxes, as views.
  const jsonv::Value v = sampleJson(5);
  auto e = j.echoView(viewOf(v, arena));
  ASSERT_TRUE(e.isOk()) << e.status().toString();
  EXPECT_EQ(*e, v);
  const jsonv::Expr x = add(negate(literal(5)), add(literal(7), {}));
  auto r = j.evalView(viewOf(x, arena));
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(*r, 2);
  jsonv::Tree t{"root", {chain(3), {"leaf", {}}}};
  auto n = j.countView(viewOf(t, arena));
  ASSERT_TRUE(n.isOk()) << n.status().toString();
  EXPECT_EQ(*n, 5u);
  // countView's $Lrpc.maxDepth(8): a deeper view is refused before it is sent.
  EXPECT_EQ(j.countView(viewOf(chain(9), arena)).status(), Errc::kInvalidArgument);
}

}  // namespace lrpc::testing
