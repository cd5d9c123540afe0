// Runs capnpc-lrpc the way lrpc_generate() does (capnp compile in the schema's directory,
// -I idl/) into a fresh temporary directory, and collects the exit status, stderr and
// what was written. Paths come from compile definitions set in tests/stubgen/CMakeLists.txt.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace lrpc::testing {

struct GeneratorRun {
  int exitCode = -1;
  std::string output;                         // stdout and stderr together
  std::map<std::string, std::string> files;  // name -> contents, what the plugin wrote
};

inline std::string readFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// `env` is prepended to capnp's command line ("LRPC_SKIP_UNSUPPORTED=1"), `args` added to it
// ("-I<dir>" for absolute imports).
inline GeneratorRun runGenerator(const std::string& schemaDir, const std::string& schema, const std::string& env = "",
                                 const std::string& args = "") {
  namespace fs = std::filesystem;
  GeneratorRun run;
  char tmpl[] = "/tmp/lrpc_stubgen_XXXXXX";
  const char* out = mkdtemp(tmpl);
  if (out == nullptr) return run;
  const std::string cmd = "cd '" + schemaDir + "' && " + env + " '" LRPC_CAPNP "' compile " + args + " -I'" LRPC_IDL_DIR
                          "' -o'" LRPC_PLUGIN "':'" + std::string(out) + "' '" + schema + "' 2>&1";
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) run.output.append(buf, n);
    int status = pclose(p);
    run.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  for (const auto& entry : fs::directory_iterator(out)) {
    run.files[entry.path().filename().string()] = readFile(entry.path());
  }
  fs::remove_all(out);
  return run;
}

}  // namespace lrpc::testing
