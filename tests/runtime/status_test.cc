#include "runtime/status.h"

#include <gtest/gtest.h>

#include <string>

namespace lrpc {
namespace {

TEST(StatusTest, DefaultIsOkAndPrintsOk) {
  Status s;
  EXPECT_TRUE(s.isOk());
  EXPECT_EQ(s.toString(), "ok");
}

TEST(StatusTest, CarriesCodeAndDetail) {
  Status s(Errc::kPeerDied, "server exited");
  EXPECT_FALSE(s.isOk());
  EXPECT_TRUE(s == Errc::kPeerDied);
  EXPECT_EQ(s.toString(), "peer died: server exited");
}

TEST(StatusTest, FromErrnoNamesTheCall) {
  Status s = Status::fromErrno(2, "open");
  EXPECT_EQ(s.code(), Errc::kIoError);
  EXPECT_NE(s.detail().find("open: "), std::string::npos);
}

TEST(ResultTest, HoldsValueOrStatus) {
  Result<std::string> v(std::string("hi"));
  ASSERT_TRUE(v.isOk());
  EXPECT_EQ(*v, "hi");
  Result<std::string> e(Errc::kNotFound, "no such name");
  ASSERT_FALSE(e.isOk());
  EXPECT_EQ(e.status().code(), Errc::kNotFound);
}

TEST(ResultTest, AnOkStatusIsNotAValue) {
  Result<int> r{Status{}};
  EXPECT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Errc::kInvalidArgument);
}

TEST(ResultTest, CopiesAndMoves) {
  Result<std::string> a(std::string(100, 'x'));
  Result<std::string> b = a;
  Result<std::string> c = std::move(a);
  EXPECT_EQ(b->size(), 100u);
  EXPECT_EQ(c->size(), 100u);
  b = Result<std::string>(Errc::kCancelled);
  EXPECT_FALSE(b.isOk());
}

TEST(ResultDeathTest, ValueOfErrorAborts) {
  Result<int> r(Errc::kNotFound);
  EXPECT_DEATH((void)r.value(), "value\\(\\) of an error Result");
}

}  // namespace
}  // namespace lrpc
