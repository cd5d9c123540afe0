// The calculator example (examples/calculator) end to end: its client's steps against its
// server's objects in one process, on the same host, and over UDP between two namespaces.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "calculator_client_steps.h"
#include "calculator_impl.h"
#include "runtime/exporter.h"
#include "runtime/import.h"
#include "tests/integration/exporter_process.h"
#include "tests/integration/harness.h"
#include "tests/transport/net_harness.h"
#include "tests/transport/udp_server_child.h"
#include "transport/client.h"
#include "transport/server.h"

namespace lrpc::testing {
namespace {

using net::testing::ForkedServer;

// Every step passes, the client's own function (a callback) included.
void expectAllSteps(calc::Calculator::Client& calculator) {
  std::string said;
  EXPECT_TRUE(calc::runSteps(calculator, [&](const std::string& line) { said += line + "\n"; })) << said;
  EXPECT_NE(said.find("pow served by the client = 1025\n"), std::string::npos) << said;
}

// A call on a capability whose frame is larger than the A-stack's inline room: 4,096
// parameters (32 KiB) go out of band, each one where it belongs (the function returns its last,
// then its first); a call with the wrong count fails as the server says, and the capability
// still works after it.
void expectLargeFrames(calc::Calculator::Client& calculator) {
  constexpr uint32_t kParams = 4096;
  auto last = calculator.defFunction(kParams, calc::parameter(kParams - 1));
  ASSERT_TRUE(last.isOk()) << last.status().toString();
  auto first = calculator.defFunction(kParams, calc::parameter(0));
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  std::vector<double> params(kParams);
  for (uint32_t i = 0; i < kParams; ++i) params[i] = 0.5 * i;
  auto v = last->call(params);
  ASSERT_TRUE(v.isOk()) << v.status().toString();
  EXPECT_EQ(*v, 0.5 * (kParams - 1));
  v = first->call(params);
  ASSERT_TRUE(v.isOk()) << v.status().toString();
  EXPECT_EQ(*v, 0.0);
  params.pop_back();
  v = last->call(params);
  EXPECT_EQ(v.status().code(), Errc::kApplication) << v.status().toString();
  params.push_back(7);
  v = last->call(params);
  ASSERT_TRUE(v.isOk()) << v.status().toString();
  EXPECT_EQ(*v, 7.0);
}

TEST(Calculator, InProcess) {
  auto calculator = calc::Calculator::Client::serve(std::make_shared<calc::CalculatorImpl>());
  expectAllSteps(calculator);
}

TEST(Calculator, SameHost) {
  TempDir dir;
  ExporterProcess server(dir.path(), exportOne<calc::Calculator, calc::CalculatorImpl>("calculator"));
  ASSERT_TRUE(server.up());
  ImportOptions io;
  io.dir = dir.path();
  auto calculator = lrpc::import<calc::Calculator>("calculator", io);
  ASSERT_TRUE(calculator.isOk()) << calculator.status().toString();
  expectAllSteps(*calculator);
  expectLargeFrames(*calculator);
}

uint16_t serveCalculator(const std::string& bind) {
  return net::testing::startUdpServer(bind, net::testing::clearTextServer(), [](net::UdpServer& server) {
    return server.add<calc::Calculator>("calculator", *new calc::CalculatorImpl).isOk();
  });
}

TEST(Calculator, TwoNamespaces) {
  NetnsPair pair;
  ASSERT_TRUE(pair.create().isOk()) << "network namespaces are needed for this test";
  ForkedServer server(pair.nsPath(true), pair.ipA() + ":0", serveCalculator);
  ASSERT_NE(server.port(), 0) << "server did not start";
  const std::string uri = "udp+clear://" + pair.ipA() + ":" + std::to_string(server.port()) + "/calculator";
  runIn(pair.nsPath(false), [&] {
    auto calculator = net::connect<calc::Calculator>(uri);
    ASSERT_TRUE(calculator.isOk()) << calculator.status().toString();
    expectAllSteps(*calculator);
    expectLargeFrames(*calculator);
  });
}

}  // namespace
}  // namespace lrpc::testing
