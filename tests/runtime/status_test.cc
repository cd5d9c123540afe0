#include "runtime/base/status.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

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

// The form for noexcept code: the detail is joined inside the Status, numbers become text
// without allocating.
TEST(StatusTest, DetailJoinedFromPieces) {
  Status s(Errc::kPeerDied, {"no answer from ", "10.0.0.1:80", " after ", detail::Decimal(7), " tries"});
  EXPECT_EQ(s.code(), Errc::kPeerDied);
  EXPECT_EQ(s.detail(), "no answer from 10.0.0.1:80 after 7 tries");
  EXPECT_EQ(std::string_view(detail::Decimal(0)), "0");
  EXPECT_EQ(std::string_view(detail::Decimal(UINT64_MAX)), "18446744073709551615");
  EXPECT_EQ(std::string_view(detail::Decimal(1000)), "1000");
  // An ok code stays ok whatever the pieces, and no pieces is a bare error.
  EXPECT_TRUE(Status(Errc::kOk, {"ignored", "too"}).isOk());
  Status bare(Errc::kBadFrame, std::initializer_list<std::string_view>{});
  EXPECT_EQ(bare.code(), Errc::kBadFrame);
  EXPECT_EQ(bare.detail(), "");
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
  // A bug in the caller: debug builds stop at it; release builds report it as an error
  // instead of pretending to hold a value.
#ifdef NDEBUG
  Result<int> r{Status{}};
  EXPECT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), Errc::kServerFault);
#else
  EXPECT_DEATH((void)Result<int>{Status{}}, "Result built from an ok Status");
#endif
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

TEST(StatusTest, IsOneWordAndAllocatesOnlyForDetail) {
  static_assert(sizeof(Status) == sizeof(void*));
  Status bare(Errc::kCancelled);
  EXPECT_EQ(bare.code(), Errc::kCancelled);
  EXPECT_TRUE(bare.detail().empty());
  EXPECT_EQ(bare.toString(), "cancelled");
  Status withEmptyDetail(Errc::kNotFound, std::string());
  EXPECT_EQ(withEmptyDetail.code(), Errc::kNotFound);
  EXPECT_TRUE(withEmptyDetail.detail().empty());
  Status okWithDetail(Errc::kOk, "ignored");
  EXPECT_TRUE(okWithDetail.isOk());
  EXPECT_TRUE(okWithDetail.detail().empty());
}

TEST(StatusTest, CopiesAndMovesKeepCodeAndDetail) {
  Status a(Errc::kBadFrame, std::string(200, 'd'));
  Status b = a;
  EXPECT_EQ(b.code(), Errc::kBadFrame);
  EXPECT_EQ(b.detail(), a.detail());
  Status c = std::move(a);
  EXPECT_EQ(c.detail().size(), 200u);
  EXPECT_TRUE(a.isOk());  // NOLINT(bugprone-use-after-move): a moved-from Status is ok
  b = Status(Errc::kIoError);
  EXPECT_EQ(b.code(), Errc::kIoError);
  EXPECT_TRUE(b.detail().empty());
  b = c;
  EXPECT_EQ(b.detail().size(), 200u);
  const Status& same = b;
  b = same;  // self-assignment keeps the record
  EXPECT_EQ(b.detail().size(), 200u);
  std::string_view view = "from a view";
  Status d(Errc::kApplication, view);
  EXPECT_EQ(d.toString(), "application error: from a view");
}

TEST(StatusTest, EveryWireByteMapsToANamedCode) {
  for (int byte = 0; byte < 256; ++byte) {
    Errc e = errcFromWire(static_cast<uint8_t>(byte));
    if (byte <= static_cast<int>(Errc::kLastErrc)) {
      EXPECT_EQ(static_cast<int>(e), byte);
    } else {
      EXPECT_EQ(e, Errc::kBadFrame) << byte;
    }
    EXPECT_NE(errcName(e), "unknown error");
  }
}

TEST(ResultTest, AssignsAcrossValueAndError) {
  Result<std::string> r(std::string("value"));
  r = Result<std::string>(Errc::kNotFound, "gone");
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().detail(), "gone");
  r = Result<std::string>(std::string("back"));
  ASSERT_TRUE(r.isOk());
  EXPECT_TRUE(r.status().isOk());
  EXPECT_EQ(*r, "back");
  Result<std::string> other(std::string("other"));
  r = other;
  EXPECT_EQ(*r, "other");
  r = Result<std::string>(Errc::kCancelled);
  Result<std::string> err2(Errc::kIoError, "disk");
  r = err2;
  EXPECT_EQ(r.status().code(), Errc::kIoError);
  std::string moved = *std::move(other);
  EXPECT_EQ(moved, "other");
}

TEST(ResultTest, IsItsValuePlusOneWord) {
  static_assert(sizeof(Result<uint64_t>) == 2 * sizeof(void*));
  static_assert(sizeof(Result<uint32_t>) == 2 * sizeof(void*));
}

TEST(ResultDeathTest, ValueOfErrorAborts) {
  Result<int> r(Errc::kNotFound);
  EXPECT_DEATH((void)r.value(), "value\\(\\) of an error Result");
}

}  // namespace
}  // namespace lrpc
