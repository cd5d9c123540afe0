// Another uid cannot import unless the server allows it (SO_PEERCRED checked by the clerk).
// Needs root, to drop to another uid in a forked child with setresuid; skipped otherwise.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/import.h"
#include "tests/integration/servers.h"

namespace lrpc::testing {
namespace {

// In a child: become `kNobody`, import, call. Exit code: 0 imported and called, 10 + Errc otherwise.
int importAsNobody(const std::string& dir) {
  if (!becomeNobody()) return 2;
  ImportOptions o;
  o.dir = dir;
  Result<TestService::Client> c = lrpc::import<TestService>("svc", o);
  if (!c.isOk()) return 10 + static_cast<int>(c.status().code());
  Result<int32_t> r = c->add(1, 2);
  if (!r.isOk()) return 10 + static_cast<int>(r.status().code());
  return *r == 3 ? 0 : 3;
}

class UidTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to switch uids";
    ::chmod(dir_.path().c_str(), 0711);  // others may reach the socket; the clerk decides
  }
  TempDir dir_;
};

TEST_F(UidTest, OtherUidIsRefusedByDefault) {
  ExporterOptions opts;
  opts.allowUids = {kNobody + 1};  // someone else: the socket is connectable, the uid check refuses
  TestServer server(dir_.path(), "svc", opts);
  ASSERT_TRUE(server.ok());
  std::string dir = dir_.path();
  Child child([&] { return importAsNobody(dir); });
  EXPECT_EQ(child.wait(), 10 + static_cast<int>(Errc::kPermissionDenied));
}

TEST_F(UidTest, OtherUidWithoutAnyAllowListCannotConnect) {
  TestServer server(dir_.path(), "svc");
  ASSERT_TRUE(server.ok());
  std::string dir = dir_.path();
  Child child([&] { return importAsNobody(dir); });
  EXPECT_EQ(child.wait(), 10 + static_cast<int>(Errc::kPermissionDenied));
}

TEST_F(UidTest, AllowedUidImportsAndCalls) {
  ExporterOptions opts;
  opts.allowUids = {kNobody};
  TestServer server(dir_.path(), "svc", opts);
  ASSERT_TRUE(server.ok());
  std::string dir = dir_.path();
  Child child([&] { return importAsNobody(dir); });
  EXPECT_EQ(child.wait(), 0);
}

}  // namespace
}  // namespace lrpc::testing
