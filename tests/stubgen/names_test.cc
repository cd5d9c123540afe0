// The generator's naming rules (stubgen/names.cc): keyword escaping, PascalCase, doc comments,
// literals and the signature hash function.
#include "stubgen/names.h"

#include <gtest/gtest.h>

namespace lrpc::stubgen {
namespace {

TEST(Names, KeywordsAndReservedSpellingsAreEscaped) {
  EXPECT_EQ(cppIdent("add"), "add");
  EXPECT_EQ(cppIdent("delete"), "delete_");
  EXPECT_EQ(cppIdent("class"), "class_");
  EXPECT_EQ(cppIdent("co_await"), "co_await_");
  EXPECT_EQ(cppIdent("NULL"), "NULL_");
  EXPECT_EQ(cppIdent("a__b"), "a__b_");
  EXPECT_EQ(cppIdent("null"), "null");  // not a C++ keyword
}

TEST(Names, PascalAndNamespaces) {
  EXPECT_EQ(pascal("bigInOut"), "BigInOut");
  EXPECT_EQ(pascal(""), "");
  EXPECT_EQ(qualifiedNamespace("lrpc::paper"), "::lrpc::paper");
  EXPECT_EQ(qualifiedNamespace("::x"), "::x");
  EXPECT_EQ(qualifiedNamespace(""), "");
}

TEST(Names, DocLines) {
  EXPECT_EQ(docLines("", 2), "");
  EXPECT_EQ(docLines("One line.\n", 0), "// One line.\n");
  EXPECT_EQ(docLines("a\n\nb", 2), "  // a\n  //\n  // b\n");
}

TEST(Names, LiteralsAndHash) {
  EXPECT_EQ(quoted("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
  EXPECT_EQ(hex64(0xab), "0x00000000000000abull");
  // FNV-1a 64 reference values.
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
}

}  // namespace
}  // namespace lrpc::stubgen
