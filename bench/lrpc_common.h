#pragma once
// Small pieces the lrpc columns (lrpc_paths.cc) and the curves (curves.cc) share.

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "runtime/stub_support.h"
#if LRPC_BENCH_NET
#include <string_view>

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

}  // namespace lrpc::bench
