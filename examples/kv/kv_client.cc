// Talks to kv_server:
//   kv_client put KEY VALUE | get KEY | delete KEY | list [PREFIX]
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "kv.lrpc.h"
#include "runtime/import.h"

namespace {

int usage() {
  std::fprintf(stderr, "usage: kv_client put KEY VALUE | get KEY | delete KEY | list [PREFIX]\n");
  return 2;
}

int fail(const lrpc::Status& s) {
  std::fprintf(stderr, "kv_client: %s\n", s.toString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  std::string_view cmd = argv[1];
  lrpc::Result<kv::KeyValue::Client> kv = lrpc::import<kv::KeyValue>("kv");
  if (!kv.isOk()) return fail(kv.status());

  if (cmd == "put" && argc == 4) {
    std::span<const uint8_t> value(reinterpret_cast<const uint8_t*>(argv[3]), std::strlen(argv[3]));
    lrpc::Result<bool> replaced = kv->put(argv[2], value);
    if (!replaced.isOk()) return fail(replaced.status());
    std::printf("%s\n", *replaced ? "replaced" : "stored");
  } else if (cmd == "get" && argc == 3) {
    lrpc::Result<kv::KeyValue::GetResults> got = kv->get(argv[2]);
    if (!got.isOk()) return fail(got.status());
    if (!got->found) {
      std::printf("(not found)\n");
      return 1;
    }
    std::printf("%.*s\n", static_cast<int>(got->value.size()), reinterpret_cast<const char*>(got->value.data()));
  } else if (cmd == "delete" && argc == 3) {
    lrpc::Result<bool> existed = kv->delete_(argv[2]);
    if (!existed.isOk()) return fail(existed.status());
    std::printf("%s\n", *existed ? "deleted" : "(not found)");
  } else if (cmd == "list" && argc <= 3) {
    lrpc::Result<std::vector<std::string>> keys = kv->list(argc == 3 ? argv[2] : "");
    if (!keys.isOk()) return fail(keys.status());
    for (const std::string& k : *keys) std::printf("%s\n", k.c_str());
  } else {
    return usage();
  }
  return 0;
}
