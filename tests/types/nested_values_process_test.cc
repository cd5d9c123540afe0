// Nested values across real processes, on both paths: a server process on the same host
// (A-stacks in shared memory, every transfer mode), and a server in another network namespace
// over UDP (the same frames as datagram payloads). The checks are those of the in-process test.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <tuple>

#include "runtime/exporter.h"
#include "runtime/import.h"
#include "tests/integration/exporter_process.h"
#include "tests/integration/harness.h"
#include "tests/integration/per_mode.h"
#include "tests/transport/net_harness.h"
#include "tests/transport/udp_server_child.h"
#include "tests/types/types_impl.h"
#include "transport/client.h"
#include "transport/server.h"

namespace lrpc::testing {
namespace {

using net::testing::ForkedServer;

class SameHost : public ::testing::TestWithParam<TransferMode> {};

TEST_P(SameHost, NestedValuesRoundTrip) {
  TempDir dir;
  ExporterProcess server(dir.path(), [](Exporter& exporter) -> std::shared_ptr<void> {
    auto impls = std::make_shared<std::tuple<ContactsImpl, JsonImpl, GenericImpl, DirectoryImpl>>();
    const bool ok = exporter.add<contacts::Contacts>("contacts", std::get<0>(*impls)).isOk() &&
                    exporter.add<jsonv::Json>("json", std::get<1>(*impls)).isOk() &&
                    exporter.add<gen::Generic>("generic", std::get<2>(*impls)).isOk() &&
                    exporter.add<contacts::Directory>("directory", std::get<3>(*impls)).isOk();
    return ok ? impls : nullptr;
  });
  ASSERT_TRUE(server.up());
  ImportOptions io;
  io.dir = dir.path();
  io.mode = GetParam();
  auto contactsClient = lrpc::import<contacts::Contacts>("contacts", io);
  ASSERT_TRUE(contactsClient.isOk()) << contactsClient.status().toString();
  auto jsonClient = lrpc::import<jsonv::Json>("json", io);
  ASSERT_TRUE(jsonClient.isOk()) << jsonClient.status().toString();
  checkNestedValues(*contactsClient, *jsonClient);
  auto genericClient = lrpc::import<gen::Generic>("generic", io);
  ASSERT_TRUE(genericClient.isOk()) << genericClient.status().toString();
  checkGenerics(*genericClient);
  auto directoryClient = lrpc::import<contacts::Directory>("directory", io);
  ASSERT_TRUE(directoryClient.isOk()) << directoryClient.status().toString();
  checkViews(*directoryClient, *jsonClient);
}

INSTANTIATE_TEST_SUITE_P(Modes, SameHost,
                         ::testing::ValuesIn(kTransferModes), modeTestName);

uint16_t serveTypes(const std::string& bind) {
  return net::testing::startUdpServer(bind, net::testing::clearTextServer(), [](net::UdpServer& server) {
    return server.add<contacts::Contacts>("contacts", *new ContactsImpl).isOk() &&
           server.add<jsonv::Json>("json", *new JsonImpl).isOk() &&
           server.add<gen::Generic>("generic", *new GenericImpl).isOk() &&
           server.add<contacts::Directory>("directory", *new DirectoryImpl).isOk();
  });
}

TEST(TwoNamespaces, NestedValuesRoundTrip) {
  NetnsPair pair;
  ASSERT_TRUE(pair.create().isOk()) << "network namespaces are needed for this test";
  ForkedServer server(pair.nsPath(true), pair.ipA() + ":0", serveTypes);
  ASSERT_NE(server.port(), 0) << "server did not start";
  const std::string base = "udp+clear://" + pair.ipA() + ":" + std::to_string(server.port());
  runIn(pair.nsPath(false), [&] {
    auto contactsClient = net::connect<contacts::Contacts>(base + "/contacts");
    ASSERT_TRUE(contactsClient.isOk()) << contactsClient.status().toString();
    auto jsonClient = net::connect<jsonv::Json>(base + "/json");
    ASSERT_TRUE(jsonClient.isOk()) << jsonClient.status().toString();
    checkNestedValues(*contactsClient, *jsonClient);
    auto genericClient = net::connect<gen::Generic>(base + "/generic");
    ASSERT_TRUE(genericClient.isOk()) << genericClient.status().toString();
    checkGenerics(*genericClient);
    auto directoryClient = net::connect<contacts::Directory>(base + "/directory");
    ASSERT_TRUE(directoryClient.isOk()) << directoryClient.status().toString();
    checkViews(*directoryClient, *jsonClient);
  });
}

}  // namespace
}  // namespace lrpc::testing
