// Every unsupported construct makes generation fail: non-zero exit, nothing written, and a
// message naming the schema file, the line, the interface / method / field and the reason.
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
  EXPECT_EQ(run.output.find("Uncaught exception"), std::string::npos) << run.output;
}

const BadCase kCases[] = {
    {"any_pointer.capnp", {"any_pointer.capnp:4: interface Calc, method get, result value: AnyPointer is not supported"}},
    {"capability.capnp", {"capability.capnp:7: interface Calc, method subscribe, param cb: interface Callback as a value is not supported"}},
    {"generic_struct.capnp", {"generic_struct.capnp:3: struct Box: generic structs are not supported",
                              "generic_struct.capnp:7: interface Store, method put, param box: generic struct Box"}},
    {"generic_method.capnp", {"generic_method.capnp:4: interface Store, method put: generic methods are not supported"}},
    {"generic_interface.capnp", {"generic_interface.capnp:3: interface Store: generic interfaces are not supported"}},
    {"union_struct.capnp", {"union_struct.capnp:3: struct Shape: unions are not supported",
                            "union_struct.capnp:10: interface Draw, method draw, param shape: struct Shape cannot be used"}},
    {"group_struct.capnp", {"group_struct.capnp:5: struct Person, field address: groups and unions are not supported"}},
    {"struct_text.capnp", {"struct_text.capnp:5: struct Entry, field name: Text is not allowed in a struct (lrpc structs are fixed-size",
                           "struct_text.capnp:8: interface Directory, method list, result entries: struct Entry cannot be used"}},
    {"struct_list.capnp", {"struct_list.capnp:4: struct Poly, field points: List is not allowed in a struct"}},
    {"list_of_list.capnp", {"list_of_list.capnp:4: interface Matrix, method set, param rows: List(List(...)) is not supported"}},
    {"list_of_interface.capnp", {"list_of_interface.capnp:7: interface Bag, method all, result items: List of an interface is not supported"}},
    {"default_param.capnp", {"default_param.capnp:4: interface Calc, method add, param b: default values are not supported"}},
    {"default_field.capnp", {"default_field.capnp:4: struct Config, field retries: default values are not supported"}},
    {"void_param.capnp", {"void_param.capnp:4: interface Ping, method ping, param nothing: Void is not supported"}},
    {"nested_interface.capnp", {"nested_interface.capnp:4: interface Outer.Inner: interfaces nested in a struct or interface are not supported"}},
    {"max_bytes_fixed.capnp", {"max_bytes_fixed.capnp:5: interface Calc, method neg, param a: $Lrpc.maxBytes applies only to Text, Data and List"}},
    {"max_bytes_field.capnp", {"max_bytes_field.capnp:5: struct Sample, field value: $Lrpc.maxBytes applies only to Text, Data and List"}},
    {"in_place_text.capnp", {"in_place_text.capnp:5: interface Notes, method put, param note: $Lrpc.inPlace applies only to Data parameters"}},
    {"in_place_result.capnp", {"in_place_result.capnp:5: interface Store, method get, result value: $Lrpc.inPlace applies only to Data parameters"}},
    {"nested_client.capnp", {"nested_client.capnp:3: interface Calc: a nested type named Client clashes with the generated Calc::Client"}},
    {"name_clash.capnp", {"name_clash.capnp:7: interface B, method run: in interface C, the name clashes with method A.run"}},
    {"reserved_name.capnp", {"reserved_name.capnp:4: interface Calc, method dispatch: the name 'dispatch' is reserved"}},
    {"recursive_struct.capnp", {"recursive_struct.capnp:3: struct Node: contains itself"}},
    {"nested_type_use.capnp", {"nested_type_use.capnp:3: struct Outer: uses ::Service::Inner, which is declared inside interface Service"}},
    {"zero_astacks.capnp", {"zero_astacks.capnp:5: interface Calc, method add: $Lrpc.astacks(0) leaves no A-stack"}},
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
