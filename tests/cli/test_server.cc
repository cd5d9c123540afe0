// The server the CLI test talks to: exports the paper service under a name on this host and
// on a UDP port, then makes `calls` Add calls to itself through a binding it keeps, so that
// `lrpc stat` has exact counters to show (1 binding live, `calls` calls served). It also serves
// the name on a second, secure UDP port, under a fresh key pair, to the one client whose public
// key file is CLIENT_PUB (or, without it, to any client).
//   cli_test_server NAME CALLS [CLIENT_PUB]
//     prints "ready <udp port> <secure udp port> <server public key>" and serves until
//     SIGTERM/SIGINT
#include <signal.h>

#include <cstdio>
#include <cstdlib>

#include "examples/paper/paper_impl.h"
#include "runtime/exporter.h"
#include "runtime/import.h"
#include "transport/secure/keys.h"
#include "transport/server.h"

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: cli_test_server NAME CALLS [CLIENT_PUB]\n");
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
  lrpc::Result<lrpc::secure::KeyPair> keys = lrpc::secure::KeyPair::generate();
  if (!keys.isOk()) {
    std::fprintf(stderr, "cli_test_server: %s\n", keys.status().toString().c_str());
    return 1;
  }
  lrpc::net::ServerOptions secureOptions;  // what `lrpc ping udp://...?key=` probes
  secureOptions.security.keyPair = *keys;
  if (argc == 4) {
    secureOptions.security.allowedClientKeyFiles = {argv[3]};
  } else {
    secureOptions.security.anyClient = true;
  }
  lrpc::net::UdpServer secureUdp(secureOptions);
  if (lrpc::Status s = secureUdp.add<lrpc::paper::Paper>(argv[1], impl); !s.isOk()) {
    std::fprintf(stderr, "cli_test_server: %s\n", s.toString().c_str());
    return 1;
  }
  lrpc::Result<uint16_t> securePort = secureUdp.bind("127.0.0.1:0");
  if (!securePort.isOk() || !secureUdp.start().isOk()) {
    std::fprintf(stderr, "cli_test_server: cannot serve secure UDP: %s\n",
                 securePort.isOk() ? "start failed" : securePort.status().toString().c_str());
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
  std::printf("ready %u %u %s\n", static_cast<unsigned>(*port), static_cast<unsigned>(*securePort),
              keys->publicKey().toText().c_str());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  return 0;
}
