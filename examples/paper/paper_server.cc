// Serves the paper's Paper interface under the name "paper" (or argv[1]) until Ctrl-C.
//   ./paper_server [name] [--allow-uid UID]...
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "examples/paper/paper_impl.h"
#include "runtime/exporter.h"

int main(int argc, char** argv) {
  std::string name = "paper";
  lrpc::ExporterOptions options;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--allow-uid") == 0 && i + 1 < argc) {
      options.allowUids.push_back(static_cast<uid_t>(std::atoi(argv[++i])));
    } else {
      name = argv[i];
    }
  }
  // Block the signals before any thread starts, so that only sigwait() below receives them.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  lrpc::paper::PaperImpl impl;
  lrpc::Exporter exporter(options);
  if (lrpc::Status s = exporter.add<lrpc::paper::Paper>(name, impl); !s.isOk()) {
    std::fprintf(stderr, "paper_server: %s\n", s.toString().c_str());
    return 1;
  }
  std::printf("paper_server: serving \"%s\" in %s (Ctrl-C stops)\n", name.c_str(), exporter.dir().c_str());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  lrpc::ExporterStats st = exporter.stats();
  std::printf("paper_server: %llu calls served, %llu bindings\n", static_cast<unsigned long long>(st.callsServed),
              static_cast<unsigned long long>(st.bindingsTotal));
  return 0;
}
