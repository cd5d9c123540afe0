// Uses calculator_server: on this host, or over UDP with an address.
//   calculator_client [udp://HOST:PORT/calculator?key=KEY]   (the address calculator_server printed)
// Each step prints what it computed; the exit code is 0 when every result is right.
#include <cstdio>
#include <string>

#include "calculator_client_steps.h"
#include "transport/connect.h"

int main(int argc, char** argv) {
  const char* target = argc > 1 ? argv[1] : "calculator";
  lrpc::Result<calc::Calculator::Client> calculator = lrpc::connect<calc::Calculator>(target);
  if (!calculator.isOk()) {
    std::fprintf(stderr, "calculator_client: %s\n", calculator.status().toString().c_str());
    return 1;
  }
  return calc::runSteps(*calculator, [](const std::string& line) { std::printf("%s\n", line.c_str()); }) ? 0 : 1;
}
