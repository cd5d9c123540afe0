// lrpc: the operator's tool.
//   lrpc ls [--all]                          the exported names, their interfaces and servers
//   lrpc ping [-c N] [-i SEC] [-q] [--mode M] [--key F] [--psk F]
//             <name | udp+clear://host:port/name | udp://host:port/name?key=K>
//   lrpc stat <name>                         a server's bindings, A-stacks, calls and errors
//   lrpc keygen <prefix> | --psk <file>      a key pair (or a pre-shared key) for secure udp://
// Common options: --dir DIR (names directory), -W/--timeout SEC (per answer, default 1).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "transport/cli/commands.h"

namespace {

constexpr char kUsage[] =
    "usage: lrpc <command> [options]\n"
    "  ls [-a|--all]             list the exported names with their interfaces and server processes\n"
    "                            (--all: every user's default names directory that we can read)\n"
    "  ping <name>               Null round trips through the server's runtime (a built-in A-stack)\n"
    "  ping udp+clear://host:port/name  session-handshake round trips to a server that takes\n"
    "                            clear text\n"
    "  ping udp://host:port/name?key=K  the same to a secure server, sealed, after a handshake that\n"
    "                            checks the server holds key K (--key, --psk: this client's key, the psk)\n"
    "  stat <name>               the server's bindings, A-stacks in use, calls served and errors\n"
    "  keygen <prefix>           write a new key pair: <prefix>.key (secret, 0600) and <prefix>.pub\n"
    "  keygen --psk <file>       write a new pre-shared key (secret, 0600)\n"
    "options:\n"
    "  --dir DIR                 names directory (default: $LRPC_DIR, $XDG_RUNTIME_DIR/lrpc, /tmp/lrpc-<uid>)\n"
    "  -W, --timeout SEC         how long to wait for each answer (default 1)\n"
    "  -c COUNT                  ping: round trips (default 10)\n"
    "  -i SEC                    ping: pause between round trips (default 0.2; 0 for back to back)\n"
    "  -q                        ping: print the summary only\n"
    "  --mode adaptive|spin|block  ping: how the server thread and we wait (default adaptive)\n"
    "  --key FILE                ping udp://: this client's private key (lrpc keygen; default: a fresh one)\n"
    "  --psk FILE                ping udp://: the pre-shared key the server requires\n";

int usage(const char* why) {
  if (why != nullptr) std::fprintf(stderr, "lrpc: %s\n", why);
  std::fputs(kUsage, stderr);
  return 2;
}

bool parseSeconds(const char* text, std::chrono::milliseconds* out) {
  char* end = nullptr;
  double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || v < 0 || v > 86400) return false;
  *out = std::chrono::milliseconds(static_cast<int64_t>(v * 1000));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage(nullptr);
  std::string_view command = argv[1];
  if (command == "help" || command == "-h" || command == "--help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (command == "keygen") {
    if (argc == 3 && argv[2][0] != '-' && argv[2][0] != '\0') return lrpc::cli::keygenCommand(argv[2]);
    if (argc == 4 && std::string_view(argv[2]) == "--psk" && argv[3][0] != '\0')
      return lrpc::cli::pskgenCommand(argv[3]);
    return usage("keygen takes a file prefix, or --psk and a file");
  }
  lrpc::cli::CommonOptions common;
  lrpc::cli::PingOptions ping;
  bool all = false;
  std::vector<std::string> args;
  for (int i = 2; i < argc; ++i) {
    std::string_view a = argv[i];
    bool hasValue = i + 1 < argc;
    if (a == "--dir" && hasValue) {
      common.dir = argv[++i];
    } else if ((a == "-W" || a == "--timeout") && hasValue) {
      if (!parseSeconds(argv[++i], &common.timeout) || common.timeout.count() == 0) return usage("bad timeout");
    } else if (a == "-c" && hasValue) {
      ping.count = std::atoi(argv[++i]);
      if (ping.count <= 0) return usage("bad count");
    } else if (a == "-i" && hasValue) {
      if (!parseSeconds(argv[++i], &ping.interval)) return usage("bad interval");
    } else if (a == "--key" && hasValue) {
      ping.keyFile = argv[++i];
    } else if (a == "--psk" && hasValue) {
      ping.pskFile = argv[++i];
    } else if (a == "--all" || a == "-a") {
      all = true;
    } else if (a == "-q") {
      ping.quiet = true;
    } else if (a == "--mode" && hasValue) {
      std::string_view m = argv[++i];
      if (m == "adaptive") {
        ping.mode = lrpc::TransferMode::kAdaptive;
      } else if (m == "spin") {
        ping.mode = lrpc::TransferMode::kSpin;
      } else if (m == "block") {
        ping.mode = lrpc::TransferMode::kBlock;
      } else {
        return usage("mode must be adaptive, spin or block");
      }
    } else if (!a.empty() && a.front() == '-') {
      return usage(("unknown option " + std::string(a)).c_str());
    } else {
      args.emplace_back(a);
    }
  }
  if (command == "ls") {
    if (!args.empty()) return usage("ls takes no name");
    return lrpc::cli::listCommand(common, all);
  }
  if (command == "stat" || command == "ping") {
    if (args.size() != 1) return usage((std::string(command) + " takes one name").c_str());
    if (command == "stat") return lrpc::cli::statCommand(common, args[0]);
    return lrpc::cli::pingCommand(common, ping, args[0]);
  }
  return usage(("unknown command " + std::string(command)).c_str());
}
