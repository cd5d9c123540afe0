// Every unsupported construct an interface's methods reach makes generation fail: non-zero exit,
// nothing written, and one message naming the schema file, the line, the declaration path
// (Struct.field, Iface.method(param), Iface.method -> result) and what to do instead.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/stubgen/generator_runner.h"

namespace lrpc::testing {
namespace {

struct BadCase {
  const char* schema;
  std::vector<std::string> expected;  // substrings of the output, in any order
};

class BadSchema : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadSchema, FailsWithAMessageAndWritesNothing) {
  const BadCase& c = GetParam();
  GeneratorRun run = runGenerator(LRPC_STUBGEN_DIR "/bad", c.schema);
  EXPECT_NE(run.exitCode, 0) << run.output;
  EXPECT_TRUE(run.files.empty()) << "generated " << run.files.begin()->first << " anyway";
  for (const auto& want : c.expected) EXPECT_NE(run.output.find(want), std::string::npos) << "want: " << want << "\ngot:\n" << run.output;
  // One line per refused construct (each case has one), then the count.
  EXPECT_NE(run.output.find("capnpc-lrpc: 1 error(s); nothing generated"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("DESIGN"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("Uncaught exception"), std::string::npos) << run.output;
}

const BadCase kCases[] = {
    {"any_pointer.capnp", {"any_pointer.capnp:4: Calc.get -> value: AnyPointer is not supported ("}},
    {"generic_struct.capnp",
     {"generic_struct.capnp:7: Store.put(box): generic struct Box without type arguments is not supported ("}},
    {"generic_method.capnp", {"generic_method.capnp:4: Store.put: generic methods are not supported ("}},
    {"generic_interface.capnp", {"generic_interface.capnp:3: Store: generic interfaces are not supported ("}},
    {"default_param.capnp",
     {"default_param.capnp:4: Store.put(d): default values that are Data literals on parameters are not supported ("}},
    {"default_field.capnp",
     {"default_field.capnp:8: Config.origin: default values that are struct literals are not supported ("}},
    {"default_list.capnp", {"default_list.capnp:4: Sum.add(xs): default values that are List literals on parameters are not supported ("}},
    {"list_void.capnp", {"list_void.capnp:4: Ping.ping(nothing): List(Void) is not supported ("}},
    {"max_bytes_fixed.capnp",
     {"max_bytes_fixed.capnp:5: Calc.neg(a): $Lrpc.maxBytes applies only to Text, Data and List values ("}},
    {"max_bytes_field.capnp", {"max_bytes_field.capnp:5: Sample.value: $Lrpc.maxBytes applies only to Text, Data and List"}},
    {"in_place_text.capnp", {"in_place_text.capnp:5: Notes.put(note): $Lrpc.inPlace applies only to Data parameters ("}},
    {"progressive_copied.capnp",
     {"progressive_copied.capnp:5: Sink.put(data): $Lrpc.progressive applies only to $Lrpc.inPlace parameters ("}},
    {"in_place_result.capnp",
     {"in_place_result.capnp:5: Store.get -> value: $Lrpc.inPlace applies only to Data parameters ("}},
    {"nested_client.capnp", {"nested_client.capnp:3: Calc: a nested type named Client clashes with the generated Calc::Client ("}},
    {"name_clash.capnp", {"name_clash.capnp:7: B.run: in interface C, the name clashes with method A.run ("}},
    {"reserved_name.capnp", {"reserved_name.capnp:4: Calc.dispatch: the method name 'dispatch' is reserved"}},
    {"recursive_struct.capnp", {"recursive_struct.capnp:5: Node.next: generic struct Node contains itself (an "
                                "instance of a generic struct cannot hold itself through lrpc::Box: hold it through a List"}},
    {"nested_type_use.capnp",
     {"nested_type_use.capnp:6: Service: its frames hold a file-scope struct that itself holds a type nested in "
      "it, so neither can be declared first in C++ ("}},
    {"views_in_place.capnp",
     {"views_in_place.capnp:5: Blobs.put: $Lrpc.inPlace and $Lrpc.views together (a view already reads the "
      "server's private copy in place: remove $Lrpc.inPlace)"}},
    {"zero_depth.capnp", {"zero_depth.capnp:4: Walker.walk: $Lrpc.maxDepth(0) admits no nested value ("}},
    {"zero_astacks.capnp", {"zero_astacks.capnp:5: Calc.add: $Lrpc.astacks(0) leaves no A-stack to call it with ("}},
};

INSTANTIATE_TEST_SUITE_P(Unsupported, BadSchema, ::testing::ValuesIn(kCases), [](const ::testing::TestParamInfo<BadCase>& p) {
  std::string name = p.param.schema;
  name = name.substr(0, name.find('.'));
  std::string out;
  for (char c : name) out += c == '_' ? 'X' : c;  // gtest names: letters and digits only
  return out;
});

TEST(BadInput, GarbageRequestIsAnErrorNotACrash) {
  const std::string cmd = "echo 'not a capnp message' | '" LRPC_PLUGIN "' 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[1024];
  std::string output;
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) output.append(buf, n);
  int status = pclose(p);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1) << output;
  EXPECT_NE(output.find("capnpc-lrpc:"), std::string::npos) << output;
}

}  // namespace
}  // namespace lrpc::testing
