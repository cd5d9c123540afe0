// capnpc-lrpc: the `capnp compile -o<path>/capnpc-lrpc:OUTDIR` plugin. Reads the
// CodeGeneratorRequest from stdin and, for each requested foo.capnp, writes foo.lrpc.h and
// foo.lrpc.cc into the current directory (capnp runs plugins inside OUTDIR). Output names use
// the schema's base name only, so includes do not depend on how capnp was invoked.
//
// Only what an interface's methods reach is checked; a struct nothing uses that cannot be
// generated is left out with a comment. By default it is all or nothing: when an interface of
// any requested file uses something unsupported, every refused construct is printed once
// (file:line: Decl.path: why, sorted by file and line) and nothing is written, so a build never
// picks up half-generated stubs. With LRPC_SKIP_UNSUPPORTED=1 such an interface is left out
// instead (a comment in the header, one warning line on stderr) and the rest is generated.
#include <capnp/schema-loader.h>
#include <capnp/schema.capnp.h>
#include <capnp/serialize.h>
#include <kj/exception.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
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

  const char* skipEnv = std::getenv("LRPC_SKIP_UNSUPPORTED");
  const bool skip = skipEnv != nullptr && *skipEnv != '\0' && std::string(skipEnv) != "0";

  std::vector<lrpc::stubgen::Diag> errors;
  std::vector<std::string> warnings;
  std::vector<lrpc::stubgen::FileText> texts;
  std::vector<std::string> names;
  for (auto file : request.getRequestedFiles()) {
    lrpc::stubgen::ModelBuilder builder(loader, request);
    lrpc::stubgen::FileModel model = builder.build(file.getId());
    std::vector<const lrpc::stubgen::InterfaceDecl*> all;
    lrpc::stubgen::forEachInterface(model, [&](const lrpc::stubgen::InterfaceDecl& d) { all.push_back(&d); });
    {
      for (const auto* dp : all) {
        const auto& d = *dp;
        if (d.refusals.empty()) continue;
        errors.insert(errors.end(), d.refusals.begin(), d.refusals.end());
        // Appended piece by piece: g++ 12 -O3 warns falsely (-Wrestrict) on literal + string.
        std::string w = d.file;
        if (d.line > 0) w.append(":").append(std::to_string(d.line));
        w.append(": warning: interface ").append(d.descriptorName.substr(d.descriptorName.find(':') + 1));
        w.append(" left out (LRPC_SKIP_UNSUPPORTED): ").append(d.refusals.front().str());
        if (d.refusals.size() > 1) w.append(" (and ").append(std::to_string(d.refusals.size() - 1)).append(" more)");
        warnings.push_back(std::move(w));
      }
    }
    names.push_back(model.baseName);
    texts.push_back(lrpc::stubgen::emitFile(model));
  }
  if (!errors.empty() && !skip) {
    lrpc::stubgen::sortUnique(errors);
    for (const auto& e : errors) std::fprintf(stderr, "%s\n", e.str().c_str());
    std::fprintf(stderr,
                 "capnpc-lrpc: %zu error(s); nothing generated (LRPC_SKIP_UNSUPPORTED=1 leaves out the interfaces "
                 "that need them instead)\n",
                 errors.size());
    return 1;
  }
  std::sort(warnings.begin(), warnings.end());
  for (const auto& w : warnings) std::fprintf(stderr, "%s\n", w.c_str());
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
