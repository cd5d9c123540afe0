// The unified entry point: one server process exports Paper on the same host and on the
// network at once; a client gets the same Paper::Client from "paper" and "udp://.../paper".
#include <gtest/gtest.h>
#include <stdlib.h>

#include "paper.lrpc.h"
#include "tests/transport/net_harness.h"
#include "transport/connect.h"

namespace lrpc {
namespace {

class PaperImpl final : public paper::Paper::Server {
 public:
  Status null() override { return {}; }
  Result<int32_t> add(int32_t a, int32_t b) override {
    return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));  // wraps: a peer picks a and b
  }
  Status bigIn(const paper::Bytes200&) override { return {}; }
  Result<paper::Bytes200> bigInOut(const paper::Bytes200& d) override { return d; }
};

TEST(Connect, SameClientTypeLocalAndRemote) {
  char tmpl[] = "/tmp/lrpc-connect-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  net::testing::ForkedServer server("", "127.0.0.1:0", [dir](const std::string& bind) -> uint16_t {
    net::NetExporter::Options o;
    o.local.dir = dir;
    auto* exporter = new net::NetExporter(o);  // lives until the child exits
    auto* impl = new PaperImpl;
    if (!exporter->add<paper::Paper>("paper", *impl).isOk()) return 0;
    auto port = exporter->start(bind);
    return port.isOk() ? *port : 0;
  });
  ASSERT_NE(server.port(), 0);
  ConnectOptions co;
  co.local.dir = dir;
  auto local = connect<paper::Paper>("paper", co);
  ASSERT_TRUE(local.isOk()) << local.status().toString();
  auto remote = connect<paper::Paper>("udp://127.0.0.1:" + std::to_string(server.port()) + "/paper", co);
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
  std::string rm = "rm -rf " + dir;
  (void)std::system(rm.c_str());
}

}  // namespace
}  // namespace lrpc
