// The unified entry point: one server process exports Paper on the same host and on the
// network at once; a client gets the same Paper::Client from "paper" and "udp+clear://.../paper".
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "examples/paper/paper_impl.h"
#include "tests/testing/every_type_impl.h"
#include "tests/integration/harness.h"
#include "tests/transport/net_harness.h"
#include "transport/connect.h"

namespace lrpc {
namespace {

// One server process exporting Paper as "paper" and every_type.capnp's Scalars as "scalars",
// both on the same host (in a names directory of its own) and on 127.0.0.1 in clear text; `co`
// finds the same-host exports.
class Connect : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string dir = dir_.path();
    server_ = std::make_unique<net::testing::ForkedServer>("", "127.0.0.1:0", [dir](const std::string& bind) -> uint16_t {
      net::NetExporter::Options o;
      o.local.dir = dir;
      o.remote.security.clearText = true;
      auto* exporter = new net::NetExporter(o);  // lives until the child exits
      auto* impl = new paper::PaperImpl;
      if (!exporter->add<paper::Paper>("paper", *impl).isOk()) return 0;
      auto* scalars = new testing::EveryTypeImpl<testing::Scalars::Server>;
      if (!exporter->add<testing::Scalars>("scalars", *scalars).isOk()) return 0;
      auto port = exporter->start(bind);
      return port.isOk() ? *port : 0;
    });
    ASSERT_NE(server_->port(), 0);
    co.local.dir = dir;
  }
  uint16_t port() const { return server_->port(); }

  testing::TempDir dir_;
  std::unique_ptr<net::testing::ForkedServer> server_;
  ConnectOptions co;
};

TEST_F(Connect, SameClientTypeLocalAndRemote) {
  auto local = connect<paper::Paper>("paper", co);
  ASSERT_TRUE(local.isOk()) << local.status().toString();
  auto remote = connect<paper::Paper>("udp+clear://127.0.0.1:" + std::to_string(port()) + "/paper", co);
  ASSERT_TRUE(remote.isOk()) << remote.status().toString();
  EXPECT_FALSE(local->binding()->remote);
  EXPECT_TRUE(remote->binding()->remote);
  for (paper::Paper::Client* c : {&*local, &*remote}) {
    auto sum = c->add(20, 22);
    ASSERT_TRUE(sum.isOk()) << sum.status().toString();
    EXPECT_EQ(*sum, 42);
    EXPECT_TRUE(c->null().isOk());
  }
  EXPECT_EQ(connect<paper::Paper>("tcp://x:1/paper", co).status(), Errc::kInvalidArgument);
  EXPECT_EQ(connect<paper::Paper>("nosuchname", co).status(), Errc::kNotFound);
}

// One table of bad requests against both paths: the same mistake gets the same code, and a
// malformed name the very same words (runtime/names.h words them on both paths).
TEST_F(Connect, BadNamesGetTheSameErrorOnBothPaths) {
  const std::string remote = "udp+clear://127.0.0.1:" + std::to_string(port()) + "/";
  struct Case {
    std::string name;
    Errc code;
  };
  const Case cases[] = {
      {"bad*name", Errc::kInvalidArgument},      {"", Errc::kInvalidArgument},
      {".hidden", Errc::kInvalidArgument},       {"sp ace", Errc::kInvalidArgument},
      {std::string(65, 'a'), Errc::kInvalidArgument}, {std::string(300, 'b'), Errc::kInvalidArgument},
      {"nope", Errc::kNotFound},                 {std::string(64, 'c'), Errc::kNotFound},
  };
  for (const Case& c : cases) {
    auto local = connect<paper::Paper>(c.name, co);
    auto net = connect<paper::Paper>(remote + c.name, co);
    ASSERT_FALSE(local.isOk()) << c.name;
    ASSERT_FALSE(net.isOk()) << c.name;
    EXPECT_EQ(local.status(), c.code) << c.name << ": " << local.status().toString();
    EXPECT_EQ(net.status(), c.code) << c.name << ": " << net.status().toString();
    if (c.code == Errc::kInvalidArgument) {
      EXPECT_EQ(net.status().detail(), local.status().detail());
    } else {
      // The same-host path adds where it looked ("in <dir>"); the words before are the same.
      const std::string words = "no server exports \"" + c.name + "\"";
      EXPECT_EQ(local.status().detail().rfind(words, 0), 0u) << local.status().detail();
      EXPECT_EQ(net.status().detail(), words);
    }
  }
}

// A handler's error reads the same whichever path carried it: a long detail cut at
// kMaxWireDetail bytes, no detail as none, a thrown exception's text, the code alike.
TEST_F(Connect, AHandlersErrorReadsTheSameOnBothPaths) {
  auto local = connect<testing::Scalars>("scalars", co);
  auto net = connect<testing::Scalars>("udp+clear://127.0.0.1:" + std::to_string(port()) + "/scalars", co);
  ASSERT_TRUE(local.isOk()) << local.status().toString();
  ASSERT_TRUE(net.isOk()) << net.status().toString();
  for (uint32_t how : {1u, 2u, 3u, 4u, 5u}) {
    Status a = local->fail(how);
    Status b = net->fail(how);
    EXPECT_FALSE(a.isOk()) << how;
    EXPECT_EQ(a.code(), b.code()) << how << ": " << a.toString() << " / " << b.toString();
    EXPECT_EQ(a.detail(), b.detail()) << how;
  }
  const Status longOne = local->fail(4);
  EXPECT_EQ(longOne.detail(), std::string(kMaxWireDetail, 'x'));
  EXPECT_EQ(local->fail(5).detail(), "");
  EXPECT_EQ(local->fail(5).code(), Errc::kApplication);
}

}  // namespace
}  // namespace lrpc
