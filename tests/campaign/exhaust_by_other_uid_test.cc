// When ExporterOptions::allowUids is set, the name's socket is mode 0666, so every uid can
// connect. A uid that is NOT allowed must not be able to hold binding slots by connecting and
// saying nothing: the acceptor checks SO_PEERCRED before a connection counts against
// maxBindings, and answers a refused uid at once.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "runtime/import.h"
#include "runtime/names.h"
#include "tests/integration/raw_client.h"
#include "tests/integration/servers.h"

namespace lrpc::campaign {
namespace {

using lrpc::testing::becomeNobody;
using lrpc::testing::Child;
using lrpc::testing::connectToName;
using lrpc::testing::kNobody;
using lrpc::testing::Pipe;
using lrpc::testing::TempDir;
using lrpc::testing::TestServer;
using lrpc::testing::TestService;

TEST(AccessExhaust, BindingsCannotBeFilledByAUidThatIsNotAllowed) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to switch uids";
  TempDir dir;
  ::chmod(dir.path().c_str(), 0711);
  ExporterOptions so;
  so.allowUids = {kNobody + 1};  // someone else: the socket becomes connectable by all
  so.maxBindings = 4;
  TestServer server(dir.path(), "svc", so);
  ASSERT_TRUE(server.ok());
  Pipe holding;
  Child squatter([&] {
    if (!becomeNobody()) return 90;
    std::vector<int> socks;
    for (int i = 0; i < 8; ++i) {
      OwnedFd s = connectToName(dir.path(), "svc");
      if (s.valid()) socks.push_back(s.release());
    }
    holding.putByte();
    for (;;) ::pause();  // never says Hello
  });
  ASSERT_TRUE(holding.getByte());
  ::usleep(100'000);  // the acceptor has taken the connections
  ImportOptions o;
  o.dir = dir.path();
  Result<TestService::Client> c = lrpc::import<TestService>("svc", o);
  EXPECT_TRUE(c.isOk()) << "a uid that may not import filled the bindings: " << c.status().toString();
}

}  // namespace
}  // namespace lrpc::campaign
