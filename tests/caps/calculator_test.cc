// The calculator example (examples/calculator) end to end: its client's steps against its
// server's objects in one process, on the same host, and over UDP between two namespaces.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "calculator_client_steps.h"
#include "calculator_impl.h"
#include "runtime/exporter.h"
#include "runtime/import.h"
#include "tests/integration/harness.h"
#include "tests/transport/net_harness.h"
#include "transport/client.h"
#include "transport/server.h"

namespace lrpc::testing {
namespace {

using net::testing::ForkedServer;
using net::testing::NetnsPair;
using net::testing::runIn;

// Every step passes, the client's own function (a callback) included.
void expectAllSteps(calc::Calculator::Client& calculator) {
  std::string said;
  EXPECT_TRUE(calc::runSteps(calculator, [&](const std::string& line) { said += line + "\n"; })) << said;
  EXPECT_NE(said.find("pow served by the client = 1025\n"), std::string::npos) << said;
}

TEST(Calculator, InProcess) {
  auto calculator = calc::Calculator::Client::serve(std::make_shared<calc::CalculatorImpl>());
  expectAllSteps(calculator);
}

TEST(Calculator, SameHost) {
  TempDir dir;
  Pipe ready;
  Child server([&] {
    calc::CalculatorImpl impl;
    ServerOptions o;
    o.dir = dir.path();
    Exporter exporter(o);
    const bool ok = exporter.add<calc::Calculator>("calculator", impl).isOk();
    ready.putByte(ok ? 'k' : 'x');
    if (!ok) return 1;
    for (;;) ::pause();
  });
  char c = 0;
  ASSERT_TRUE(ready.get(&c, 1) && c == 'k');
  ImportOptions io;
  io.dir = dir.path();
  auto calculator = lrpc::import<calc::Calculator>("calculator", io);
  ASSERT_TRUE(calculator.isOk()) << calculator.status().toString();
  expectAllSteps(*calculator);
}

uint16_t serveCalculator(const std::string& bind) {
  auto* impl = new calc::CalculatorImpl;  // live until the child exits
  net::ServerOptions so;
  so.security.clearText = true;
  auto* server = new net::UdpServer(so);
  if (!server->add<calc::Calculator>("calculator", *impl).isOk()) return 0;
  auto port = server->bind(bind);
  if (!port.isOk() || !server->start().isOk()) return 0;
  return *port;
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
  });
}

}  // namespace
}  // namespace lrpc::testing
