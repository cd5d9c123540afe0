// capnpc-lrpc: the `capnp compile -o<path>/capnpc-lrpc:OUTDIR` plugin. Reads the
// CodeGeneratorRequest from stdin and, for each requested foo.capnp, writes foo.lrpc.h and
// foo.lrpc.cc into the current directory (capnp runs plugins inside OUTDIR). Output names use
// the schema's base name only, so includes do not depend on how capnp was invoked.
//
// All or nothing: when any requested file uses something unsupported, every error is printed
// (file:line: interface, method, field: why) and nothing is written, so a build never picks up
// half-generated stubs.
#include <capnp/schema-loader.h>
#include <capnp/schema.capnp.h>
#include <capnp/serialize.h>
#include <kj/exception.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "stubgen/emit.h"
#include "stubgen/model.h"

namespace {

bool writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    std::fprintf(stderr, "capnpc-lrpc: cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

int run() {
  capnp::ReaderOptions options;
  options.traversalLimitInWords = uint64_t{1} << 30;  // schema sets can be large; this is our input
  capnp::StreamFdMessageReader reader(0, options);
  auto request = reader.getRoot<capnp::schema::CodeGeneratorRequest>();

  capnp::SchemaLoader loader;
  for (auto node : request.getNodes()) loader.load(node);

  std::vector<std::string> errors;
  std::vector<lrpc::stubgen::FileText> texts;
  std::vector<std::string> names;
  for (auto file : request.getRequestedFiles()) {
    lrpc::stubgen::ModelBuilder builder(loader, request);
    lrpc::stubgen::FileModel model = builder.build(file.getId(), errors);
    names.push_back(model.baseName);
    texts.push_back(lrpc::stubgen::emitFile(model));
  }
  if (!errors.empty()) {
    for (const auto& e : errors) std::fprintf(stderr, "%s\n", e.c_str());
    std::fprintf(stderr, "capnpc-lrpc: %zu error(s); nothing generated\n", errors.size());
    return 1;
  }
  for (size_t i = 0; i < texts.size(); ++i) {
    if (!writeFile(names[i] + ".lrpc.h", texts[i].header) || !writeFile(names[i] + ".lrpc.cc", texts[i].source)) {
      return 1;
    }
  }
  return 0;
}

}  // namespace

int main() {
  // capnp reports malformed input by throwing kj::Exception: turn it into a message and an
  // exit status instead of a crash.
  int status = 1;
  kj::Maybe<kj::Exception> failure = kj::runCatchingExceptions([&] { status = run(); });
  KJ_IF_MAYBE(e, failure) {
    std::fprintf(stderr, "capnpc-lrpc: %s\n", e->getDescription().cStr());
    return 1;
  }
  return status;
}
