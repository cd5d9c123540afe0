#pragma once
// Small pieces the lrpc columns (lrpc_paths.cc), the curves (curves.cc) and the struct rows
// (struct_args.cc) share.

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

#include "bench/harness.h"
#include "runtime/stub_support.h"
#if LRPC_BENCH_LOCAL
#include "runtime/exporter.h"
#include "runtime/import.h"
#endif
#if LRPC_BENCH_NET
#include <string_view>

#include "transport/client.h"
#include "transport/server.h"
#endif

namespace lrpc::bench {

// Every lrpc call of a benchmark gets a deadline, so that a lost reply shows up as a failed
// benchmark instead of a run that never ends.
inline CallOptions withDeadline() {
  CallOptions options;
  options.timeout = std::chrono::seconds(10);
  return options;
}

// Blocks SIGTERM in the calling thread (and the threads it starts later) so that a server
// can wait for it with sigwait and then run its destructors (which remove its names).
inline sigset_t blockTerm() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

inline void waitForTerm(const sigset_t& set) {
  int sig;
  sigwait(&set, &sig);
}

// The directory for this benchmark run's lrpc names (removed by the sessions when empty).
inline std::string namesDir() { return "/tmp/lrpc-bench-" + std::to_string(getpid()) + "-names"; }

#if LRPC_BENCH_NET
// A receive mode as the argument the client passes to its forked server, and back.
inline const char* receiveModeArg(net::ReceiveMode mode) {
  return mode == net::ReceiveMode::kBusyPoll ? "busy" : mode == net::ReceiveMode::kBlocking ? "block" : "adaptive";
}
inline net::ReceiveMode receiveModeFromArg(std::string_view arg) {
  return arg == "busy" ? net::ReceiveMode::kBusyPoll
         : arg == "block" ? net::ReceiveMode::kBlocking
                          : net::ReceiveMode::kAdaptive;
}
#endif

#if LRPC_BENCH_LOCAL
// The names directory of a same-host session, removed when the session goes. A base listed
// before the session's own, so that it is made before start() exports in it and removed
// after the session has unbound and stopped its server (bases go in reverse order).
class OwnsNamesDir {
 protected:
  OwnsNamesDir() : dir_(namesDir()) {}
  ~OwnsNamesDir() { ::rmdir(dir_.c_str()); }  // the Exporter removed what it put there
  OwnsNamesDir(const OwnsNamesDir&) = delete;
  OwnsNamesDir& operator=(const OwnsNamesDir&) = delete;

  std::string dir_;
};

// Forks a same-host server (`spec.kind`, plus what the caller set, e.g. its CPU) exporting
// `name` in `dir` (serveLocalUntilTerm), and imports it into `client`, with a deadline on calls.
template <class Iface>
Status startLocal(ServerSpec spec, const std::string& name, const std::string& dir, TransferMode mode,
                  std::unique_ptr<ServerProcess>& server, typename Iface::Client& client) {
  spec.args = {name, dir};
  Result<std::unique_ptr<ServerProcess>> started = ServerProcess::start(spec);
  if (!started) return started.status();
  server = std::move(started.value());
  ImportOptions options;
  options.mode = mode;
  options.dir = dir;
  Result<typename Iface::Client> imported = import<Iface>(name, options);
  if (!imported) return imported.status();
  client = imported.value().withOptions(withDeadline());
  return {};
}

// The body of a forked same-host server: `impl` exported as argv[0] in the names directory
// argv[1], ready once it is, until SIGTERM. 2: bad arguments, 3: the export failed.
template <class Iface>
int serveLocalUntilTerm(int readyFd, int argc, char** argv, typename Iface::Server& impl) {
  if (argc < 2) return 2;
  sigset_t term = blockTerm();  // before the exporter starts threads, which inherit it
  ExporterOptions options;
  options.dir = argv[1];
  Exporter exporter(options);
  if (Status s = exporter.add<Iface>(argv[0], impl); !s) {
    std::fprintf(stderr, "lrpc_bench server: %s\n", s.toString().c_str());
    return 3;
  }
  signalReady(readyFd);
  waitForTerm(term);
  return 0;
}
#endif

#if LRPC_BENCH_NET
// Forks a network server (`spec.kind`) serving `name` (serveNetUntilTerm) in the server
// namespace of `netns` (null: on 127.0.0.1 here), and connects `client` to it from the client
// namespace, with a deadline on calls. `secure`: the server makes a key pair and takes any
// client, the client pins the key it reports (udp://...?key=); else both say clear text
// (udp+clear://). `uri` (if set) gets the address the client connected to.
template <class Iface>
Status startNet(ServerSpec spec, const std::string& name, net::ReceiveMode mode, const NetnsPair* netns,
                std::unique_ptr<ServerProcess>& server, typename Iface::Client& client, bool secure = false,
                std::string* uri = nullptr) {
  const std::string host = netns ? netns->ipA() : "127.0.0.1";
  // The server reports the port it got (and, secure, its public key).
  spec.args = {host + ":0", receiveModeArg(mode), name, secure ? "secure" : "clear"};
  if (netns) spec.netns = netns->nsPath(true);
  Result<std::unique_ptr<ServerProcess>> started = ServerProcess::start(spec);
  if (!started) return started.status();
  server = std::move(started.value());
  const std::string& ready = server->readyInfo();
  const size_t space = ready.find(' ');
  const std::string target = secure ? "udp://" + host + ":" + ready.substr(0, space) + "/" + name +
                                          (space == std::string::npos ? "" : "?key=" + ready.substr(space + 1))
                                    : "udp+clear://" + host + ":" + ready + "/" + name;
  if (uri) *uri = target;
  net::ClientOptions options;
  options.mode = mode;
  std::optional<NetnsScope> scope;
  if (netns) {
    Result<NetnsScope> entered = NetnsScope::enter(netns->nsPath(false));
    if (!entered) return entered.status();
    scope.emplace(std::move(*entered));
  }
  Result<typename Iface::Client> connected = net::connect<Iface>(target, options);
  scope.reset();
  if (!connected) return connected.status();
  client = connected.value().withOptions(withDeadline());
  return {};
}

// The body of a forked network server: `impl` served as argv[2] on the UDP address argv[0] in
// receive mode argv[1], secure or in clear text as argv[3] says ("secure": a fresh key pair,
// any client; "clear", or absent: clear text), ready (with its port, and its public key
// after a space when secure) once it is, until SIGTERM.
template <class Iface>
int serveNetUntilTerm(int readyFd, int argc, char** argv, typename Iface::Server& impl) {
  if (argc < 3) return 2;
  const char* name = argv[2];
  const bool secure = argc >= 4 && std::string_view(argv[3]) == "secure";
  sigset_t term = blockTerm();
  net::ServerOptions options;
  options.mode = receiveModeFromArg(argv[1]);
  if (secure) {
    Result<secure::KeyPair> key = secure::KeyPair::generate();
    if (!key) return 3;
    options.security.keyPair = *key;
    options.security.anyClient = true;
  } else {
    options.security.clearText = true;
  }
  net::UdpServer server(options);
  Result<uint16_t> port = Status(Errc::kInvalidArgument, "not bound");
  Status s = server.add<Iface>(name, impl);
  if (s) {
    port = server.bind(argv[0]);
    s = port ? server.start() : port.status();
  }
  if (!s) {
    std::fprintf(stderr, "lrpc_bench server: %s\n", s.toString().c_str());
    return 3;
  }
  std::string ready = std::to_string(port.value());
  if (std::optional<secure::PublicKey> key = server.publicKey()) ready += " " + key->toText();
  signalReady(readyFd, ready);
  waitForTerm(term);
  return 0;
}
#endif

// A forked server's entry on each layer: `Iface` served by the object makeImpl() returns (a
// pointer) until SIGTERM. A layer this build leaves out answers 2, as bad arguments do.
template <class Iface, class MakeImpl>
int serveLocal(int readyFd, int argc, char** argv, MakeImpl makeImpl) {
#if LRPC_BENCH_LOCAL
  auto impl = makeImpl();
  return serveLocalUntilTerm<Iface>(readyFd, argc, argv, *impl);
#else
  (void)readyFd, (void)argc, (void)argv, (void)makeImpl;
  return 2;
#endif
}

template <class Iface, class MakeImpl>
int serveNet(int readyFd, int argc, char** argv, MakeImpl makeImpl) {
#if LRPC_BENCH_NET
  auto impl = makeImpl();
  return serveNetUntilTerm<Iface>(readyFd, argc, argv, *impl);
#else
  (void)readyFd, (void)argc, (void)argv, (void)makeImpl;
  return 2;
#endif
}

}  // namespace lrpc::bench
