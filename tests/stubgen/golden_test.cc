// The generator's output for testdata/*.capnp must match the checked-in expectations byte for
// byte (run tests/stubgen/regenerate_golden.sh after a deliberate change). The same schemas
// are also generated at build time into this test, so the golden text is known to compile.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <type_traits>

#include "golden.lrpc.h"
#include "ordering.lrpc.h"
#include "tests/stubgen/generator_runner.h"

namespace lrpc::testing {
namespace {

// The first line where `want` and `got` differ, for a readable failure.
std::string firstDifference(const std::string& want, const std::string& got) {
  std::istringstream a(want), b(got);
  std::string la, lb;
  for (int line = 1;; ++line) {
    bool ha = static_cast<bool>(std::getline(a, la)), hb = static_cast<bool>(std::getline(b, lb));
    if (!ha && !hb) return "identical";
    if (!ha || !hb || la != lb) {
      return "line " + std::to_string(line) + ":\n  expected: " + (ha ? la : "<end>") + "\n  actual:   " + (hb ? lb : "<end>");
    }
  }
}

void expectGolden(const std::string& schema, const std::string& base) {
  const std::string dir = LRPC_STUBGEN_DIR "/testdata";
  GeneratorRun run = runGenerator(dir, schema);
  ASSERT_EQ(run.exitCode, 0) << run.output;
  for (const char* ext : {".lrpc.h", ".lrpc.cc"}) {
    const std::string name = base + ext;
    ASSERT_TRUE(run.files.count(name)) << name << " not written";
    const std::string want = readFile(dir + "/" + name);
    EXPECT_TRUE(want == run.files[name]) << name << " differs from the golden file at "
                                         << firstDifference(want, run.files[name])
                                         << "\n(run tests/stubgen/regenerate_golden.sh if the change is intended)";
  }
}

TEST(Golden, Golden) { expectGolden("golden.capnp", "golden"); }
TEST(Golden, GoldenBase) { expectGolden("golden_base.capnp", "golden_base"); }
TEST(Golden, Ordering) { expectGolden("ordering.capnp", "ordering"); }
TEST(Golden, Defaults) { expectGolden("defaults.capnp", "defaults"); }
TEST(Golden, NestedInterfaces) { expectGolden("nested_iface.capnp", "nested_iface"); }
TEST(Golden, CodedStructs) { expectGolden("coded.capnp", "coded"); }
TEST(Golden, Capabilities) { expectGolden("caps.capnp", "caps"); }

TEST(Golden, GeneratedCodeCompilesAndNamesAreEscaped) {
  // `delete` and `class` are C++ keywords: the generator escapes the members as delete_ and
  // class_ (naming them here is the check that they exist), and each escaped member holds its
  // field's type where the schema puts it: after upload's Data blob, after Later's `first`.
  using Upload = golden::v1::Sensor::UploadArgsFrame;
  static_assert(std::is_same_v<decltype(Upload::delete_), uint8_t> && offsetof(Upload, delete_) == sizeof(VarRef));
  static_assert(std::is_same_v<decltype(Later::class_), uint8_t> && offsetof(Later, class_) == sizeof(Earlier));
  EXPECT_EQ(golden::v1::Sensor::kProcedures[golden::v1::Sensor::kHistory].astackCount, 2u);
  EXPECT_EQ(golden::v1::Sensor::kName, 0u);  // inherited from Named, first
  EXPECT_EQ(Derived::kPair, 0u);
  EXPECT_EQ(Derived::kOwn, 1u);
  EXPECT_EQ(Empty::kProcedureCount, 0u);
  EXPECT_EQ(Empty::kDescriptor.procedures, nullptr);
  golden::v1::Sensor::Client unbound;
  EXPECT_EQ(unbound.read().status().code(), Errc::kBindingRejected);
}

}  // namespace
}  // namespace lrpc::testing
