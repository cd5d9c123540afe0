// The subcommands of `lrpc`. Each prints to stdout, reports errors on stderr as
// "lrpc <command>: <reason>", and returns the process exit code (0 ok, 1 failed, 2 usage).
#pragma once

#include <chrono>
#include <string>

#include "runtime/transfer.h"

namespace lrpc::cli {

struct CommonOptions {
  std::string dir;  // names directory; empty: the runtime's default ($LRPC_DIR, ...)
  std::chrono::milliseconds timeout = std::chrono::seconds(1);  // per answer
};

struct PingOptions {
  int count = 10;
  std::chrono::milliseconds interval = std::chrono::milliseconds(200);
  TransferMode mode = TransferMode::kAdaptive;
  bool quiet = false;  // summary only
  std::string keyFile;  // udp://...?key=: this client's private key (empty: a fresh one)
  std::string pskFile;  // udp://...?key=: the pre-shared key the server requires
};

// `all`: every user's names directory this process can read (the default directories of
// every uid: /run/user/*/lrpc and /tmp/lrpc-*), not only ours.
int listCommand(const CommonOptions& common, bool all);
int statCommand(const CommonOptions& common, const std::string& name);
// `target` is a same-host name, udp+clear://host:port/name, or udp://host:port/name?key=... for
// a secure server (transport/cli/udp_probe.h).
int pingCommand(const CommonOptions& common, const PingOptions& ping, const std::string& target);
// Writes a new X25519 key pair as <prefix>.key (0600) and <prefix>.pub, printing the public key
// in the text form addresses use; never overwrites.
int keygenCommand(const std::string& prefix);
// Writes a new pre-shared key file (0600); never overwrites.
int pskgenCommand(const std::string& path);

}  // namespace lrpc::cli
