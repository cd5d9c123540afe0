// What the generator checks and how it reports: only what an interface's methods reach can
// refuse a schema; each refused construct is one line (file:line: Decl.path: why), sorted;
// LRPC_SKIP_UNSUPPORTED=1 leaves out the interfaces that need one and generates the rest.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "mixed.lrpc.h"
#include "tests/stubgen/generator_runner.h"

namespace lrpc::testing {
namespace {

const std::string kDir = LRPC_STUBGEN_DIR "/policy";

// The plugin's own lines (capnp adds "plugin failed" after a non-zero exit).
std::vector<std::string> pluginLines(const std::string& output) {
  std::vector<std::string> lines;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (line.find("plugin failed") == std::string::npos) lines.push_back(line);
  }
  return lines;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(Policy, DataOnlySchemaGeneratesItsPlainTypes) {
  GeneratorRun run = runGenerator(kDir, "data_only.capnp");
  ASSERT_EQ(run.exitCode, 0) << run.output;
  EXPECT_TRUE(run.output.empty()) << run.output;
  const std::string& h = run.files["data_only.lrpc.h"];
  EXPECT_TRUE(contains(h, "struct Point {")) << h;
  EXPECT_TRUE(contains(h, "enum class Color : uint16_t {")) << h;
  EXPECT_FALSE(contains(h, "struct Person {")) << h;
  EXPECT_TRUE(contains(h, "// struct Person is not generated")) << h;
  EXPECT_TRUE(contains(h, "data_only.capnp:13: Person.name: AnyPointer is not supported")) << h;
  EXPECT_TRUE(run.files.count("data_only.lrpc.cc"));
}

TEST(Policy, UnusedRefusedStructsDoNotRefuseTheInterface) {
  GeneratorRun run = runGenerator(kDir, "unused_struct.capnp");
  ASSERT_EQ(run.exitCode, 0) << run.output;
  const std::string& h = run.files["unused_struct.lrpc.h"];
  EXPECT_TRUE(contains(h, "static const ::lrpc::InterfaceDescriptor kDescriptor;")) << h;
  EXPECT_TRUE(contains(h, "// struct Shape is not generated")) << h;
  // Label is left out, but its nested Style (which a method uses) is generated inside a shell.
  EXPECT_TRUE(contains(h, "struct Label {  // only its nested types")) << h;
  EXPECT_TRUE(contains(h, "struct Style {")) << h;
}

TEST(Policy, StrictModeRefusesTheWholeFileAndNamesTheConstruct) {
  GeneratorRun run = runGenerator(kDir, "mixed.capnp");
  EXPECT_NE(run.exitCode, 0);
  EXPECT_TRUE(run.files.empty());
  auto lines = pluginLines(run.output);
  ASSERT_EQ(lines.size(), 2u) << run.output;  // Worse extends Bad: still one line
  EXPECT_EQ(lines[0],
            "mixed.capnp:7: Bad.get -> value: AnyPointer is not supported (a frame needs a type known at generation "
            "time: use a concrete type)");
  EXPECT_TRUE(contains(lines[1], "1 error(s); nothing generated")) << lines[1];
}

TEST(Policy, SkipUnsupportedLeavesOutOnlyTheRefusedInterfaces) {
  GeneratorRun run = runGenerator(kDir, "mixed.capnp", "LRPC_SKIP_UNSUPPORTED=1");
  ASSERT_EQ(run.exitCode, 0) << run.output;
  auto lines = pluginLines(run.output);
  ASSERT_EQ(lines.size(), 2u) << run.output;  // one warning per interface left out
  EXPECT_TRUE(contains(lines[0], "mixed.capnp:3: warning: interface Bad left out (LRPC_SKIP_UNSUPPORTED): "
                                 "mixed.capnp:7: Bad.get -> value: AnyPointer is not supported"))
      << lines[0];
  EXPECT_TRUE(contains(lines[1], "mixed.capnp:9: warning: interface Worse left out")) << lines[1];
  const std::string& h = run.files["mixed.lrpc.h"];
  EXPECT_TRUE(contains(h, "// interface Bad is not generated (LRPC_SKIP_UNSUPPORTED)")) << h;
  EXPECT_TRUE(contains(h, "// interface Worse is not generated (LRPC_SKIP_UNSUPPORTED)")) << h;
  EXPECT_TRUE(contains(h, "class Good::Client {")) << h;
  EXPECT_FALSE(contains(h, "class Bad::Client")) << h;
  EXPECT_FALSE(contains(h, "class Worse::Client")) << h;
}

TEST(Policy, SkipUnsupportedOutputCompilesAndWorks) {
  // mixed.capnp is generated into this test by lrpc_generate(... SKIP_UNSUPPORTED).
  EXPECT_EQ(Good::kProcedureCount, 1u);
  Bad::Token token{};
  token.id = 7;
  Good::Client unbound;
  EXPECT_EQ(unbound.check(token).status().code(), Errc::kBindingRejected);
}

TEST(Policy, ARefusedStructIsOneLineHoweverOftenItIsUsed) {
  GeneratorRun run = runGenerator(kDir, "shared_struct.capnp");
  EXPECT_NE(run.exitCode, 0);
  auto lines = pluginLines(run.output);
  ASSERT_EQ(lines.size(), 3u) << run.output;
  // Sorted by line, each construct once, no internal references.
  EXPECT_EQ(lines[0].rfind("shared_struct.capnp:6: Entry.name: AnyPointer is not supported (", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1].rfind("shared_struct.capnp:11: A.ping(nothing): List(Void) is not supported (", 0), 0u) << lines[1];
  EXPECT_FALSE(contains(run.output, "DESIGN")) << run.output;
  EXPECT_FALSE(contains(run.output, "cannot be used")) << run.output;
}

// `-> stream` is a call with no results, said so beside the method (tests/async runs one).
TEST(Policy, StreamMethodsGenerateWithNoResults) {
  GeneratorRun run = runGenerator(kDir, "stream.capnp");
  EXPECT_EQ(run.exitCode, 0) << run.output;
  const std::string& h = run.files["stream.lrpc.h"];
  EXPECT_TRUE(contains(h, "// -> stream: no results.")) << h;
  EXPECT_TRUE(contains(h, "::lrpc::Status write(std::span<const uint8_t> bytes) const;")) << h;
  EXPECT_TRUE(contains(run.files["stream.lrpc.cc"], "::lrpc::Status Sink::Client::write(std::span<const uint8_t> bytes) const {"))
      << run.files["stream.lrpc.cc"];
  EXPECT_TRUE(contains(h, "virtual ::lrpc::Status write(std::span<const uint8_t> bytes) = 0;")) << h;
  EXPECT_FALSE(contains(h, "StreamResult")) << h;
}

// `Capability` (no declared interface) is the runtime's lrpc::Capability::Client
// (runtime/contract.h); tests/caps calls through one on both paths.
TEST(Policy, CapabilityIsTheRuntimesUntypedClient) {
  GeneratorRun run = runGenerator(kDir, "capability.capnp");
  EXPECT_EQ(run.exitCode, 0) << run.output;
  const std::string& h = run.files["capability.lrpc.h"];
  EXPECT_TRUE(contains(h, "::lrpc::Result<::lrpc::Capability::Client> lookup(std::string_view name) const")) << h;
  EXPECT_TRUE(contains(h, "virtual ::lrpc::Result<::lrpc::Capability::Client> lookup(std::string_view name) = 0;"))
      << h;
}

TEST(Policy, AFieldsLineIsItsOwnNotAnEarlierNamesake) {
  GeneratorRun run = runGenerator(kDir, "same_name.capnp");
  EXPECT_NE(run.exitCode, 0);
  EXPECT_TRUE(contains(run.output, "same_name.capnp:8: Outer.name: AnyPointer is not supported")) << run.output;
}

TEST(Policy, ErrorsInAnImportedFileHaveTheirLine) {
  GeneratorRun run = runGenerator(kDir, "importer.capnp", "", "-I'" + kDir + "/lib'");
  EXPECT_NE(run.exitCode, 0);
  EXPECT_TRUE(contains(run.output, "types.capnp:6: Record.tags: AnyPointer is not supported")) << run.output;
}

}  // namespace
}  // namespace lrpc::testing
