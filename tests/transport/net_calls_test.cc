// End to end across "two hosts": a server process in one network namespace, the client in
// another, joined by a veth pair; and the same over 127.0.0.1 for machines that refuse
// namespaces. Every call type of the paper service and of the every-type schema, then
// faults injected with nftables (loss, duplication) and a server killed mid-call.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "every_type.lrpc.h"
#include "paper.lrpc.h"
#include "tests/testing/every_type_impl.h"
#include "tests/testing/pattern.h"
#include "tests/testing/progressive_consumer.h"
#include "tests/transport/net_harness.h"
#include "tests/transport/udp_server_child.h"
#include "tests/transport/test_service.h"
#include "transport/client.h"
#include "transport/server.h"

namespace lrpc::net {
namespace {

using lrpc::testing::Everything;
using lrpc::testing::EveryTypeImpl;
using lrpc::testing::fnv1a;
using lrpc::testing::NetnsPair;
using lrpc::testing::runIn;
using testing::Svc;

// Not examples/paper/paper_impl.h: BigInOut transforms every word, so that the test below sees
// each of the 200 bytes cross the wire both ways.
class PaperImpl final : public paper::Paper::Server {
 public:
  Status null() override { return {}; }
  Result<int32_t> add(int32_t a, int32_t b) override {
    return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));  // wraps: a peer picks a and b
  }
  Status bigIn(const paper::Bytes200& d) override {
    last_ = d.w0 + d.w24;
    return {};
  }
  Result<paper::Bytes200> bigInOut(const paper::Bytes200& d) override {
    paper::Bytes200 r = d;
    uint64_t* w = &r.w0;
    for (int i = 0; i < 25; ++i) w[i] = w[i] * 3 + 1;
    return r;
  }

 private:
  uint64_t last_ = 0;
};

// Runs in the server child: every service under its name. Objects live until _exit.
uint16_t serveAll(const std::string& bind, bool emulated) {
  ServerOptions so = testing::clearTextServer();
  so.emulatedEndpoint = emulated;
  return testing::startUdpServer(bind, so, [](UdpServer& server) {
    return server.add<paper::Paper>("paper", *new PaperImpl).isOk() &&
           server.add<Everything>("everything", *new EveryTypeImpl<Everything::Server>).isOk() &&
           server.add<lrpc::testing::Progressive>("progressive", *new lrpc::testing::ProgressiveConsumer).isOk() &&
           server.add("svc", Svc::kDescriptor, new Svc::Impl).isOk();
  });
}

ClientOptions clientOptions(bool emulated) {
  ClientOptions co;
  co.emulatedEndpoint = emulated;
  co.initialRto = std::chrono::milliseconds(10);
  co.maxRetries = 14;
  return co;
}

void checkPaper(const std::string& base, bool emulated) {
  auto c = connect<paper::Paper>(base + "/paper", clientOptions(emulated));
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  EXPECT_TRUE(c->null().isOk());
  for (int i = -3; i < 50; ++i) {
    auto s = c->add(i, 1000 * i);
    ASSERT_TRUE(s.isOk()) << s.status().toString();
    EXPECT_EQ(*s, 1001 * i);
  }
  paper::Bytes200 in{};
  uint64_t* w = &in.w0;
  for (int i = 0; i < 25; ++i) w[i] = 0x0101010101010101ull * i;
  EXPECT_TRUE(c->bigIn(in).isOk());
  auto out = c->bigInOut(in);
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  const uint64_t* o = &out->w0;
  for (int i = 0; i < 25; ++i) EXPECT_EQ(o[i], w[i] * 3 + 1);
}

void checkEverything(const std::string& base, bool emulated) {
  using namespace lrpc::testing;
  auto c = connect<Everything>(base + "/everything", clientOptions(emulated));
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  auto b = c->echoBool(true);
  ASSERT_TRUE(b.isOk());
  EXPECT_TRUE(*b);
  auto ints = c->allInts(-8, -16000, -32000000, std::numeric_limits<int64_t>::min(), 250, 65000, 4000000000u,
                         std::numeric_limits<uint64_t>::max());
  ASSERT_TRUE(ints.isOk());
  EXPECT_EQ(ints->d, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(ints->h, std::numeric_limits<uint64_t>::max());
  auto fl = c->floats(-1.25f, std::numeric_limits<double>::infinity());
  ASSERT_TRUE(fl.isOk());
  EXPECT_EQ(fl->f, -1.25f);
  EXPECT_TRUE(std::isinf(fl->d));
  auto e = c->enums(Mood::kAngry, base::Color::kGreen);
  ASSERT_TRUE(e.isOk());
  EXPECT_EQ(e->m, Mood::kAngry);
  EXPECT_EQ(e->c, base::Color::kGreen);
  Outer outer{};
  outer.a = 7;
  outer.big = 2.5;
  outer.point = base::Point{3, -4};
  outer.nested.v = 999;
  auto oo = c->outer(outer);
  ASSERT_TRUE(oo.isOk());
  EXPECT_EQ(oo->a, 7);
  EXPECT_EQ(oo->point.y, -4);
  EXPECT_EQ(oo->nested.v, 999);
  EXPECT_TRUE(c->nothing().isOk());
  Status f = c->fail(1);
  EXPECT_EQ(f.code(), Errc::kApplication);
  EXPECT_EQ(f.detail(), "failed on purpose");
  EXPECT_EQ(c->fail(2).code(), Errc::kServerFault);

  auto p = c->ping(41);
  ASSERT_TRUE(p.isOk());
  EXPECT_EQ(*p, 42u);
  auto t = c->text("hello across the wire");
  ASSERT_TRUE(t.isOk());
  EXPECT_EQ(*t, "hello across the wire");
  std::vector<uint8_t> blob(8000);  // larger than one datagram: fragmented both ways
  for (size_t i = 0; i < blob.size(); ++i) blob[i] = static_cast<uint8_t>(i * 13);
  auto d = c->data(blob);
  ASSERT_TRUE(d.isOk()) << d.status().toString();
  EXPECT_EQ(*d, blob);
  auto dg = c->digest(blob);  // $Lrpc.inPlace: the server's own request buffer
  ASSERT_TRUE(dg.isOk()) << dg.status().toString();
  EXPECT_EQ(dg->n, blob.size());
  EXPECT_EQ(dg->hash, fnv1a(blob));
  auto m = c->mixed(1, "abc", true, std::span<const uint8_t>(blob.data(), 5), 10);
  ASSERT_TRUE(m.isOk());
  EXPECT_EQ(m->t, "abc");
  EXPECT_TRUE(m->flag);
  EXPECT_EQ(m->count, 1u + 3u + 5u + 10u);

  std::vector<int32_t> iv = {1, -2, 3, std::numeric_limits<int32_t>::min()};
  auto ri = c->ints(iv);
  ASSERT_TRUE(ri.isOk());
  EXPECT_EQ(*ri, iv);
  bool bv[] = {true, false, true};
  auto rb = c->bools(bv);
  ASSERT_TRUE(rb.isOk());
  EXPECT_EQ(*rb, std::vector<bool>({true, false, true}));
  Mood mv[] = {Mood::kAngry, Mood::kCalm};
  auto rm = c->moods(mv);
  ASSERT_TRUE(rm.isOk());
  EXPECT_EQ(rm->size(), 2u);
  Outer sv[] = {outer, outer};
  auto rs = c->structs(sv);
  ASSERT_TRUE(rs.isOk());
  ASSERT_EQ(rs->size(), 2u);
  EXPECT_EQ((*rs)[1].nested.v, 999);
  std::string_view tv[] = {"a", "", "long text here"};
  auto rt = c->texts(tv);
  ASSERT_TRUE(rt.isOk());
  EXPECT_EQ(*rt, std::vector<std::string>({"a", "", "long text here"}));
  std::span<const uint8_t> dv[] = {std::span<const uint8_t>(blob.data(), 3), {}};
  auto rd = c->datas(dv);
  ASSERT_TRUE(rd.isOk());
  ASSERT_EQ(rd->size(), 2u);
  EXPECT_EQ((*rd)[0].size(), 3u);
  uint64_t uv[] = {1, std::numeric_limits<uint64_t>::max()};
  auto ru = c->u64s(uv);
  ASSERT_TRUE(ru.isOk());
  EXPECT_EQ((*ru)[1], std::numeric_limits<uint64_t>::max());
  auto self = c->self();
  ASSERT_TRUE(self.isOk());
  EXPECT_EQ(*self, "Everything");
}

// A $Lrpc.progressive argument over the network arrives whole in the request buffer: the
// handler's waits (lrpc::awaitArgument) return at once, and it reads every byte.
void checkProgressive(const std::string& base, bool emulated) {
  using lrpc::testing::Progressive;
  auto c = connect<Progressive>(base + "/progressive", clientOptions(emulated));
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  for (size_t n : {size_t{0}, size_t{100}, size_t{300'001}}) {
    const std::vector<uint8_t> sent = lrpc::testing::pattern(n, static_cast<uint32_t>(n));
    auto r = c->consume(sent, 4096);
    ASSERT_TRUE(r.isOk()) << n << ": " << r.status().toString();
    EXPECT_EQ(r->n, n);
    EXPECT_EQ(r->hash, fnv1a(sent));
  }
}

// Tokens are executed exactly once: the server process counts, a query reads the count.
void checkExactlyOnce(const std::string& base, bool emulated, int calls) {
  auto b = connect(base + "/svc", Svc::kDescriptor, clientOptions(emulated));
  ASSERT_TRUE(b.isOk()) << b.status().toString();
  for (uint64_t t = 1; t <= static_cast<uint64_t>(calls); ++t) {
    auto r = testing::callToken(**b, t);
    ASSERT_TRUE(r.isOk()) << t << ": " << r.status().toString();
    EXPECT_EQ(*r, t * 3);
  }
  for (size_t n : {size_t{3000}, size_t{60000}}) {
    auto data = testing::pattern(n, static_cast<uint32_t>(n));
    auto r = testing::callEcho(**b, data, 0x21);
    ASSERT_TRUE(r.isOk()) << n << ": " << r.status().toString();
  }
  for (uint64_t t = 1; t <= static_cast<uint64_t>(calls); ++t) {
    auto q = testing::queryToken(**b, t);
    ASSERT_TRUE(q.isOk()) << q.status().toString();
    EXPECT_EQ(*q, 1u) << "token " << t;
  }
}

struct Where {
  bool netns;
  bool emulated;
};

class NetCalls : public ::testing::TestWithParam<Where> {
 protected:
  void SetUp() override {
    if (GetParam().netns) {
      pair_ = std::make_unique<NetnsPair>();
      if (Status s = pair_->create(); !s.isOk()) {
        if (s.code() == Errc::kPermissionDenied) GTEST_SKIP() << "network namespaces refused: " << s.detail();
        FAIL() << s.toString();
      }
    }
    std::string ns = GetParam().netns ? pair_->nsPath(true) : "";
    std::string host = GetParam().netns ? pair_->ipA() : "127.0.0.1";
    bool emulated = GetParam().emulated;
    server_ = std::make_unique<testing::ForkedServer>(ns, host + ":0",
                                                      [emulated](const std::string& b) { return serveAll(b, emulated); });
    ASSERT_NE(server_->port(), 0) << "server did not start";
    base_ = "udp+clear://" + host + ":" + std::to_string(server_->port());
  }
  void TearDown() override {
    server_.reset();
    pair_.reset();
  }
  // Runs `fn` where the client lives: namespace B, or here.
  void client(const std::function<void()>& fn) { runIn(GetParam().netns ? pair_->nsPath(false) : "", fn); }

  std::unique_ptr<NetnsPair> pair_;
  std::unique_ptr<testing::ForkedServer> server_;
  std::string base_;
};

TEST_P(NetCalls, PaperEveryCall) {
  client([&] { checkPaper(base_, GetParam().emulated); });
}

TEST_P(NetCalls, EveryTypeEveryCall) {
  client([&] { checkEverything(base_, GetParam().emulated); });
}

TEST_P(NetCalls, ProgressiveArgument) {
  client([&] { checkProgressive(base_, GetParam().emulated); });
}

TEST_P(NetCalls, ExactlyOnceWithoutFaults) {
  client([&] { checkExactlyOnce(base_, GetParam().emulated, 50); });
}

TEST_P(NetCalls, ServerKilledMidCallIsAnErrorNotAHang) {
  client([&] {
    ClientOptions co = clientOptions(GetParam().emulated);
    co.maxRetries = 8;
    co.initialRto = std::chrono::milliseconds(5);
    auto b = connect(base_ + "/svc", Svc::kDescriptor, co);
    ASSERT_TRUE(b.isOk()) << b.status().toString();
    ASSERT_TRUE(testing::callNull(**b).isOk());
    std::thread killer([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      server_->kill();
    });
    RemoteCall c(**b, Svc::kSlow, {});
    uint32_t ms = 5000;
    std::memcpy(c.args(), &ms, sizeof ms);
    Status s = c.invoke();
    killer.join();
    EXPECT_EQ(s, Errc::kPeerDied) << s.toString();
  });
}

std::string whereName(const ::testing::TestParamInfo<Where>& p) {
  return std::string(p.param.netns ? "netns" : "loopback") + (p.param.emulated ? "_emulated" : "_uring");
}

INSTANTIATE_TEST_SUITE_P(Hosts, NetCalls,
                         ::testing::Values(Where{true, false}, Where{true, true}, Where{false, false}, Where{false, true}),
                         whereName);

struct Fault {
  const char* name;
  int loss;
  int dup;
};

class NetFaults : public ::testing::TestWithParam<Fault> {};

TEST_P(NetFaults, EveryCallCompletesExactlyOnce) {
  NetnsPair pair;
  if (Status s = pair.create(); !s.isOk()) {
    if (s.code() == Errc::kPermissionDenied) GTEST_SKIP() << "network namespaces refused: " << s.detail();
    FAIL() << s.toString();
  }
  if (GetParam().loss > 0) {
    ASSERT_TRUE(pair.addLoss(GetParam().loss)) << "nft loss rule refused";
  }
  if (GetParam().dup > 0) {
    ASSERT_TRUE(pair.addDuplication(GetParam().dup)) << "nft dup rule refused";
  }
  testing::ForkedServer server(pair.nsPath(true), pair.ipA() + ":0", [](const std::string& b) { return serveAll(b, false); });
  ASSERT_NE(server.port(), 0);
  std::string base = "udp+clear://" + pair.ipA() + ":" + std::to_string(server.port());
  runIn(pair.nsPath(false), [&] {
    checkExactlyOnce(base, false, 100);
    checkPaper(base, false);
  });
}

INSTANTIATE_TEST_SUITE_P(Nft, NetFaults,
                         ::testing::Values(Fault{"loss1", 1, 0}, Fault{"loss5", 5, 0}, Fault{"loss20", 20, 0},
                                           Fault{"dup20", 0, 20}, Fault{"loss5_dup10", 5, 10}),
                         [](const ::testing::TestParamInfo<Fault>& p) { return std::string(p.param.name); });

// Reordering (with some loss) through a user-level relay in the client's namespace.
TEST(NetReorder, EveryCallCompletesExactlyOnce) {
  NetnsPair pair;
  if (Status s = pair.create(); !s.isOk()) {
    if (s.code() == Errc::kPermissionDenied) GTEST_SKIP() << "network namespaces refused: " << s.detail();
    FAIL() << s.toString();
  }
  ASSERT_TRUE(pair.addLoss(2)) << "nft loss rule refused";
  testing::ForkedServer server(pair.nsPath(true), pair.ipA() + ":0", [](const std::string& b) { return serveAll(b, false); });
  ASSERT_NE(server.port(), 0);
  runIn(pair.nsPath(false), [&] {
    testing::ReorderRelay relay(pair.ipB(), pair.ipA(), server.port(), 25);
    std::string base = "udp+clear://" + pair.ipB() + ":" + std::to_string(relay.port());
    checkExactlyOnce(base, false, 100);
    checkPaper(base, false);
    EXPECT_GT(relay.reordered(), 0u);
  });
}

}  // namespace
}  // namespace lrpc::net
