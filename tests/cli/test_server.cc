// The server the CLI test talks to: exports the paper service under a name on this host and
// on a UDP port, then makes `calls` Add calls to itself through a binding it keeps, so that
// `lrpc stat` has exact counters to show (1 binding live, `calls` calls served).
//   cli_test_server NAME CALLS     prints "ready <udp port>" and serves until SIGTERM/SIGINT
#include <signal.h>

#include <cstdio>
#include <cstdlib>

#include "examples/paper/paper_impl.h"
#include "runtime/exporter.h"
#include "runtime/import.h"
#include "transport/server.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: cli_test_server NAME CALLS\n");
    return 2;
  }
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  lrpc::paper::PaperImpl impl;
  lrpc::Exporter exporter;
  if (lrpc::Status s = exporter.add<lrpc::paper::Paper>(argv[1], impl); !s.isOk()) {
    std::fprintf(stderr, "cli_test_server: %s\n", s.toString().c_str());
    return 1;
  }
  lrpc::net::ServerOptions udpOptions;
  udpOptions.security.clearText = true;  // what `lrpc ping udp+clear://` probes
  lrpc::net::UdpServer udp(udpOptions);
  if (lrpc::Status s = udp.add<lrpc::paper::Paper>(argv[1], impl); !s.isOk()) {
    std::fprintf(stderr, "cli_test_server: %s\n", s.toString().c_str());
    return 1;
  }
  lrpc::Result<uint16_t> port = udp.bind("127.0.0.1:0");
  if (!port.isOk() || !udp.start().isOk()) {
    std::fprintf(stderr, "cli_test_server: cannot serve UDP\n");
    return 1;
  }
  lrpc::Result<lrpc::paper::Paper::Client> self = lrpc::import<lrpc::paper::Paper>(argv[1]);
  if (!self.isOk()) {
    std::fprintf(stderr, "cli_test_server: %s\n", self.status().toString().c_str());
    return 1;
  }
  int calls = std::atoi(argv[2]);
  for (int i = 0; i < calls; ++i) {
    if (lrpc::Result<int32_t> sum = self->add(i, 1); !sum.isOk() || *sum != i + 1) {
      std::fprintf(stderr, "cli_test_server: add failed\n");
      return 1;
    }
  }
  std::printf("ready %u\n", static_cast<unsigned>(*port));
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  return 0;
}
