#include <cstdio>
#include <string>

#include "transport/cli/commands.h"
#include "transport/secure/keys.h"

namespace lrpc::cli {

int keygenCommand(const std::string& prefix) {
  auto pair = secure::KeyPair::generate();
  Status s = pair.isOk() ? secure::writeKeyPair(*pair, prefix) : pair.status();
  if (!s.isOk()) {
    std::fprintf(stderr, "lrpc keygen: %s\n", s.toString().c_str());
    return 1;
  }
  std::printf("wrote %s.key (secret, mode 0600) and %s.pub\npublic key: %s\n", prefix.c_str(), prefix.c_str(),
              pair->publicKey().toText().c_str());
  return 0;
}

int pskgenCommand(const std::string& path) {
  auto psk = secure::PresharedKey::generate();
  Status s = psk.isOk() ? secure::writePresharedKey(*psk, path) : psk.status();
  if (!s.isOk()) {
    std::fprintf(stderr, "lrpc keygen: %s\n", s.toString().c_str());
    return 1;
  }
  std::printf("wrote %s (pre-shared key, mode 0600): give it to both sides\n", path.c_str());
  return 0;
}

}  // namespace lrpc::cli
