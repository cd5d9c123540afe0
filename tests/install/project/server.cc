// Serves Greeter under a name on this host and on a UDP port at once:
//   greeter_server NAME      prints "ready <port>", serves until SIGTERM or SIGINT
#include <signal.h>

#include <cstdio>
#include <string>

#include "greeter.lrpc.h"
#include "runtime/exporter.h"
#include "transport/server.h"

namespace {

class Greeter final : public greeter::Greeter::Server {
 public:
  lrpc::Result<std::string> greet(std::string_view name) override { return "hello, " + std::string(name); }
  lrpc::Result<int32_t> add(int32_t a, int32_t b) override {
    return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));  // wraps: a peer picks a and b
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: greeter_server NAME\n");
    return 2;
  }
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  Greeter impl;
  lrpc::Exporter exporter;
  if (lrpc::Status s = exporter.add<greeter::Greeter>(argv[1], impl); !s.isOk()) {
    std::fprintf(stderr, "greeter_server: %s\n", s.toString().c_str());
    return 1;
  }
  lrpc::net::ServerOptions udpOptions;
  udpOptions.security.clearText = true;  // loopback only: clear text, the explicit opt-in
  lrpc::net::UdpServer udp(udpOptions);
  if (lrpc::Status s = udp.add<greeter::Greeter>(argv[1], impl); !s.isOk()) {
    std::fprintf(stderr, "greeter_server: %s\n", s.toString().c_str());
    return 1;
  }
  lrpc::Result<uint16_t> port = udp.bind("127.0.0.1:0");
  if (!port.isOk()) {
    std::fprintf(stderr, "greeter_server: %s\n", port.status().toString().c_str());
    return 1;
  }
  if (lrpc::Status s = udp.start(); !s.isOk()) {
    std::fprintf(stderr, "greeter_server: %s\n", s.toString().c_str());
    return 1;
  }
  std::printf("ready %u\n", static_cast<unsigned>(*port));
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  return 0;
}
