// Where names live and how they are locked (runtime/names.h).
#include "runtime/names.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>

namespace lrpc::detail {
namespace {

class NamesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lrpc-names-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(NamesTest, CreatesAPrivateDirectory) {
  std::string sub = dir_ + "/names";
  Result<std::string> d = namesDir(sub, true);
  ASSERT_TRUE(d.isOk()) << d.status().toString();
  struct stat st;
  ASSERT_EQ(::stat(sub.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(namesDir(dir_ + "/missing", false).status().code(), Errc::kNotFound);
}

TEST_F(NamesTest, RefusesADirectoryOthersCanWrite) {
  ::chmod(dir_.c_str(), 0777);
  EXPECT_EQ(namesDir(dir_, false).status().code(), Errc::kPermissionDenied);
  ::chmod(dir_.c_str(), 01777);  // sticky, like /tmp: fine
  EXPECT_TRUE(namesDir(dir_, false).isOk());
}

TEST_F(NamesTest, DefaultFollowsTheEnvironment) {
  std::string lrpcDir = dir_ + "/env";
  ::setenv("LRPC_DIR", lrpcDir.c_str(), 1);
  Result<std::string> d = namesDir("", true);
  ::unsetenv("LRPC_DIR");
  ASSERT_TRUE(d.isOk());
  EXPECT_EQ(*d, lrpcDir);
}

TEST_F(NamesTest, NamesAreChecked) {
  EXPECT_TRUE(checkName("paper").isOk());
  EXPECT_TRUE(checkName("kv-2.v1_x").isOk());
  for (const char* bad : {"", ".hidden", "a/b", "a b", "..", "x\n"}) {
    EXPECT_EQ(checkName(bad).code(), Errc::kInvalidArgument) << bad;
  }
  EXPECT_EQ(checkName(std::string(65, 'a')).code(), Errc::kInvalidArgument);
}

TEST_F(NamesTest, ASecondLockIsRefusedAndAReleasedOneIsFree) {
  Result<OwnedFd> first = lockName(dir_, "svc");
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  EXPECT_EQ(lockName(dir_, "svc").status().code(), Errc::kAlreadyExists);
  first->reset();  // the holder dies: the kernel drops its lock
  EXPECT_TRUE(lockName(dir_, "svc").isOk());
}

}  // namespace
}  // namespace lrpc::detail
