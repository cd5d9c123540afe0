// Serves the calculator as "calculator" on this host and, given an address, over UDP too:
//   calculator_server [HOST:PORT]
// until Ctrl-C. Run calculator_client in another terminal (or another namespace). Over UDP it
// is authenticated and encrypted: a key pair made at start, any client, and the address to
// give calculator_client (with the public key to pin) printed.
#include <signal.h>

#include <cstdio>

#include "calculator_impl.h"
#include "transport/connect.h"
#include "transport/secure/keys.h"

int main(int argc, char** argv) {
  sigset_t stop;  // blocked before any thread starts; sigwait() below takes them
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  calc::CalculatorImpl calculator;
  lrpc::Result<lrpc::secure::KeyPair> key = lrpc::secure::KeyPair::generate();
  if (!key.isOk()) {
    std::fprintf(stderr, "calculator_server: %s\n", key.status().toString().c_str());
    return 1;
  }
  lrpc::net::NetExporter::Options options;
  options.remote.security.keyPair = *key;
  options.remote.security.anyClient = true;  // clients still authenticate this server
  lrpc::net::NetExporter exporter(options);
  if (lrpc::Status s = exporter.add<calc::Calculator>("calculator", calculator); !s.isOk()) {
    std::fprintf(stderr, "calculator_server: %s\n", s.toString().c_str());
    return 1;
  }
  std::printf("calculator_server: serving \"calculator\" in %s", exporter.local().dir().c_str());
  if (argc > 1) {
    lrpc::Result<uint16_t> port = exporter.start(argv[1]);
    if (!port.isOk()) {
      std::fprintf(stderr, "\ncalculator_server: %s\n", port.status().toString().c_str());
      return 1;
    }
    std::printf(" and on UDP: calculator_client udp://HOST:%u/calculator?key=%s", static_cast<unsigned>(*port),
                key->publicKey().toText().c_str());
  }
  std::printf("; Ctrl-C stops\n");
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  return 0;
}
