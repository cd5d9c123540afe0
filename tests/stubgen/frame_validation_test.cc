// The generated dispatch and client reader treat the other side as hostile: every malformed
// frame gives kBadFrame (never a crash, never a handler call), and Bool bytes that are not
// 0/1 are read as != 0.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "every_type.lrpc.h"
#include "tests/testing/every_type_impl.h"
#include "tests/testing/in_process_channel.h"

namespace lrpc::testing {
namespace {

// Builds (fixed part, tail) byte vectors.
struct Frame {
  std::vector<std::byte> args;
  std::vector<std::byte> tail;

  template <class T>
  void put(size_t offset, const T& v) {
    if (args.size() < offset + sizeof v) args.resize(offset + sizeof v);
    std::memcpy(args.data() + offset, &v, sizeof v);
  }
  void putTail(std::string_view s) {
    for (char c : s) tail.push_back(static_cast<std::byte>(c));
  }
  template <class T>
  void putTailValue(const T& v) {
    size_t at = tail.size();
    tail.resize(at + sizeof v);
    std::memcpy(tail.data() + at, &v, sizeof v);
  }
};

class FrameValidation : public ::testing::Test {
 protected:
  Status dispatch(uint32_t procedure, const Frame& f) {
    const auto& d = Everything::kDescriptor;
    size_t resultsSize = procedure < d.procedureCount ? d.procedures[procedure].resultsSize : 0;
    last = std::make_unique<BufferServerCall>(std::span<const std::byte>(f.args), std::span<const std::byte>(f.tail),
                                              resultsSize);
    return Everything::Server::dispatch(static_cast<Everything::Server*>(&impl), procedure, *last);
  }
  void expectBad(uint32_t procedure, const Frame& f) {
    int before = impl.calls;
    Status s = dispatch(procedure, f);
    EXPECT_EQ(s.code(), Errc::kBadFrame) << s.toString();
    EXPECT_EQ(impl.calls, before) << "the handler ran on a bad frame";
  }

  EveryTypeImpl<Everything::Server> impl;
  std::unique_ptr<BufferServerCall> last;
};

TEST_F(FrameValidation, BadProcedureNumber) {
  expectBad(Everything::kProcedureCount, Frame{});
  expectBad(0xffffffffu, Frame{});
  Status s = dispatch(1000, Frame{});
  EXPECT_EQ(s.detail(), "every_type.capnp:Everything: no procedure 1000");
  EXPECT_EQ(dispatch(0xffffffffu, Frame{}).detail(), "every_type.capnp:Everything: no procedure 4294967295");
}

TEST_F(FrameValidation, TruncatedArguments) {
  Frame f;
  f.put<uint8_t>(0, 1);
  expectBad(Everything::kAllInts, f);  // needs 32 bytes
  f.args.resize(Everything::kProcedures[Everything::kAllInts].argsSize - 1);
  expectBad(Everything::kAllInts, f);
  Frame text;
  text.args.resize(7);
  expectBad(Everything::kText, text);
  Frame empty;
  expectBad(Everything::kOuter, empty);
}

TEST_F(FrameValidation, GoodTextFrameIsAccepted) {
  Frame f;
  f.put(0, VarRef{0, 5});
  f.putTail("hello");
  ASSERT_TRUE(dispatch(Everything::kText, f).isOk());
  VarRef r{};
  std::memcpy(&r, last->results.data(), sizeof r);
  EXPECT_EQ(r.offset, 0u);
  EXPECT_EQ(r.length, 5u);
  ASSERT_EQ(last->tail.size(), 5u);
  EXPECT_EQ(std::memcmp(last->tail.data(), "hello", 5), 0);
}

TEST_F(FrameValidation, VarRefOutOfRange) {
  Frame f;
  f.putTail("hello");
  f.put(0, VarRef{6, 0});  // starts past the end
  expectBad(Everything::kText, f);
  f.put(0, VarRef{0, 6});  // ends past the end
  expectBad(Everything::kText, f);
  f.put(0, VarRef{3, 3});  // overlaps the end
  expectBad(Everything::kText, f);
  f.put(0, VarRef{0xffffffffu, 2});  // offset + length wraps
  expectBad(Everything::kText, f);
  f.put(0, VarRef{2, 0xffffffffu});
  expectBad(Everything::kData, f);
  f.put(0, VarRef{5, 0});  // empty, at the very end: fine
  EXPECT_TRUE(dispatch(Everything::kText, f).isOk());
}

TEST_F(FrameValidation, MisalignedListLengths) {
  Frame f;
  f.tail.resize(64);
  f.put(0, VarRef{0, 6});  // not a whole number of Int32
  expectBad(Everything::kInts, f);
  f.put(0, VarRef{0, 12});  // not a whole number of VarRefs
  expectBad(Everything::kTexts, f);
  f.put(0, VarRef{0, sizeof(Outer) + 1});
  expectBad(Everything::kStructs, f);
  f.put(0, VarRef{0, 3});  // Mood is 2 bytes
  expectBad(Everything::kMoods, f);
  f.put(0, VarRef{0, 8});
  EXPECT_TRUE(dispatch(Everything::kInts, f).isOk());
}

TEST_F(FrameValidation, ListOfTextElementsAreChecked) {
  Frame f;
  f.put(0, VarRef{0, 16});
  f.putTailValue(VarRef{16, 2});
  f.putTailValue(VarRef{18, 100});  // past the end
  f.putTail("abcd");
  expectBad(Everything::kTexts, f);
  // Elements that all name the whole tail: more bytes than the tail holds.
  Frame amp;
  amp.put(0, VarRef{0, 8 * 4});
  for (int i = 0; i < 4; ++i) amp.putTailValue(VarRef{0, 40});
  amp.putTail("01234567");
  expectBad(Everything::kTexts, amp);
  expectBad(Everything::kDatas, amp);
  // The same layout, honest.
  Frame ok;
  ok.put(0, VarRef{0, 16});
  ok.putTailValue(VarRef{16, 2});
  ok.putTailValue(VarRef{18, 2});
  ok.putTail("abcd");
  ASSERT_TRUE(dispatch(Everything::kTexts, ok).isOk());
}

TEST_F(FrameValidation, MaxBytesExceededInTheFrame) {
  Frame f;
  f.putTail(std::string(17, 'x'));
  f.put(0, VarRef{0, 17});
  expectBad(Everything::kLimited, f);
  f.put(0, VarRef{0, 16});
  EXPECT_TRUE(dispatch(Everything::kLimited, f).isOk());
  Frame u;
  u.tail.resize(72);
  u.put(0, VarRef{0, 72});  // 9 UInt64, limit 64 bytes
  expectBad(Everything::kU64s, u);
  Frame lt;  // List(Text), limit 40: 3 elements = 24 + 17 bytes
  lt.put(0, VarRef{0, 24});
  lt.putTailValue(VarRef{24, 17});
  lt.putTailValue(VarRef{24, 0});
  lt.putTailValue(VarRef{24, 0});
  lt.putTail(std::string(17, 'y'));
  expectBad(Everything::kLimitedTexts, lt);
}

TEST_F(FrameValidation, BoolBytesAreNormalized) {
  Frame f;
  f.put<uint8_t>(0, 7);
  ASSERT_TRUE(dispatch(Everything::kEchoBool, f).isOk());
  EXPECT_EQ(static_cast<uint8_t>(last->results[0]), 1u);  // written back as 0/1

  // A struct with Bools inside: the handler must see true, not an invalid bool.
  Frame o;
  o.args.resize(sizeof(Outer));
  o.args[offsetof(Outer, inner) + offsetof(Inner, flag)] = std::byte{0x80};
  o.args[offsetof(Outer, flag)] = std::byte{2};
  ASSERT_TRUE(dispatch(Everything::kOuter, o).isOk());
  EXPECT_EQ(static_cast<uint8_t>(last->results[offsetof(Outer, inner) + offsetof(Inner, flag)]), 1u);
  EXPECT_EQ(static_cast<uint8_t>(last->results[offsetof(Outer, flag)]), 1u);

  Frame b;
  b.put(0, VarRef{0, 3});
  b.tail = {std::byte{0}, std::byte{9}, std::byte{255}};
  ASSERT_TRUE(dispatch(Everything::kBools, b).isOk());
  ASSERT_EQ(last->tail.size(), 3u);
  EXPECT_EQ(static_cast<uint8_t>(last->tail[0]), 0u);
  EXPECT_EQ(static_cast<uint8_t>(last->tail[1]), 1u);
  EXPECT_EQ(static_cast<uint8_t>(last->tail[2]), 1u);
}

TEST_F(FrameValidation, HandlerThrowsOrFails) {
  Frame f;
  f.put<uint32_t>(0, 2);
  Status s = dispatch(Everything::kFail, f);
  EXPECT_EQ(s.code(), Errc::kServerFault);
  EXPECT_NE(s.detail().find("Scalars.fail"), std::string::npos);
  EXPECT_NE(s.detail().find("boom"), std::string::npos);
  f.put<uint32_t>(0, 1);
  s = dispatch(Everything::kFail, f);
  EXPECT_EQ(s.code(), Errc::kApplication);
  EXPECT_EQ(s.detail(), "failed on purpose");
}

// The client checks what the server sends back, too.
class ReplyValidation : public ::testing::Test {
 protected:
  ReplyValidation() : bound(bindInProcess<Everything>(impl)), client(bound.binding) {}
  EveryTypeImpl<Everything::Server> impl;
  InProcess<Everything> bound;
  Everything::Client client;
};

TEST_F(ReplyValidation, ResultVarRefOutOfRange) {
  bound.channel->tamperReply = [](MessageBuffer& reply) {
    VarRef bad{0, 1000};
    std::memcpy(reply.data(), &bad, sizeof bad);
  };
  EXPECT_EQ(client.text("abc").status().code(), Errc::kBadFrame);
  EXPECT_EQ(client.ints(std::vector<int32_t>{1}).status().code(), Errc::kBadFrame);
  EXPECT_EQ(client.texts(std::vector<std::string_view>{"a"}).status().code(), Errc::kBadFrame);
}

TEST_F(ReplyValidation, ResultOverMaxBytesOrMisaligned) {
  bound.channel->tamperReply = [](MessageBuffer& reply) {
    (void)reply.resize(8 + 17);
    VarRef big{0, 17};
    std::memcpy(reply.data(), &big, sizeof big);
  };
  EXPECT_EQ(client.limited("a").status().code(), Errc::kBadFrame);
  bound.channel->tamperReply = [](MessageBuffer& reply) {
    VarRef odd{0, 2};
    std::memcpy(reply.data(), &odd, sizeof odd);
  };
  EXPECT_EQ(client.ints(std::vector<int32_t>{1, 2}).status().code(), Errc::kBadFrame);
}

TEST_F(ReplyValidation, ShortReply) {
  bound.channel->tamperReply = [](MessageBuffer& reply) { (void)reply.resize(2); };
  EXPECT_EQ(client.ping(1).status().code(), Errc::kBadFrame);
}

TEST_F(ReplyValidation, ResultBoolsAreNormalized) {
  bound.channel->tamperReply = [](MessageBuffer& reply) { reply.data()[0] = std::byte{5}; };
  auto r = client.echoBool(false);
  ASSERT_TRUE(r.isOk());
  EXPECT_TRUE(*r);
}

}  // namespace
}  // namespace lrpc::testing
