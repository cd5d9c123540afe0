// Calls greeter_server the same way over both paths, with one stub type:
//   greeter_client NAME             same host (shared-memory A-stacks)
//   greeter_client udp+clear://H:P/NAME   the network transport (clear text; udp://...?key= for secure)
// Prints the answers; exits 1 on any error or wrong answer.
#include <cstdio>
#include <string>
#include <string_view>

#include "greeter.lrpc.h"
#include "runtime/import.h"
#include "transport/client.h"

namespace {

int fail(const lrpc::Status& s) {
  std::fprintf(stderr, "greeter_client: %s\n", s.toString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: greeter_client NAME | udp+clear://host:port/NAME | udp://host:port/NAME?key=K\n");
    return 2;
  }
  std::string_view target = argv[1];
  lrpc::Result<greeter::Greeter::Client> client =
      target.starts_with("udp://") || target.starts_with("udp+clear://") ? lrpc::net::connect<greeter::Greeter>(target) : lrpc::import<greeter::Greeter>(target);
  if (!client.isOk()) return fail(client.status());

  lrpc::Result<std::string> hello = client->greet("out-of-tree");
  if (!hello.isOk()) return fail(hello.status());
  lrpc::Result<int32_t> sum = client->add(40, 2);
  if (!sum.isOk()) return fail(sum.status());
  std::printf("%s\n%d\n", hello->c_str(), *sum);
  return *hello == "hello, out-of-tree" && *sum == 42 ? 0 : 1;
}
