// The processes the crash matrix kills: a same-host server whose handlers can be held at a
// known point (they say "entered" through a pipe and wait for "release"), which also answers
// "what do you hold" questions, and a UDP server of the same kind. Each is a forked child of
// the test (harness.h: PR_SET_PDEATHSIG and an alarm, so nothing outlives the test).
#pragma once

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "runtime/exporter.h"
#include "tests/campaign/campaign.h"
#include "tests/integration/harness.h"
#include "tests/integration/servers.h"
#include "tests/integration/test_service.h"
#include "tests/transport/test_service.h"
#include "transport/server.h"

namespace lrpc::campaign {

using lrpc::testing::Child;
using lrpc::testing::Pipe;
using lrpc::testing::serveReports;
using lrpc::testing::TestService;

// sleepMs(kHoldMs) and echo of exactly kHoldEchoBytes bytes (out of band both ways) stop in the
// handler until released; every other call behaves as TestService's.
inline constexpr uint32_t kHoldMs = 987654;
inline constexpr size_t kHoldEchoBytes = 100'001;

class HeldService final : public TestService::Server {
 public:
  HeldService(Pipe& entered, Pipe& release) : entered_(entered), release_(release) {}
  Result<uint32_t> sleepMs(uint32_t ms) override {
    if (ms != kHoldMs) return TestService::Server::sleepMs(ms);
    hold();
    return ms;
  }
  Result<std::vector<uint8_t>> echo(std::span<const uint8_t> data) override {
    if (data.size() == kHoldEchoBytes) hold();
    return TestService::Server::echo(data);
  }

 private:
  void hold() {
    entered_.putByte('e');
    (void)release_.getByte(30'000);  // the test releases us; a lost test still ends the hold
  }
  Pipe& entered_;
  Pipe& release_;
};

// What a server process reports about itself.
struct ServerReport {
  Resources res;
  uint64_t bindingsLive = 0;
  uint64_t serverThreads = 0;
  uint64_t callsServed = 0;
  uint64_t sessions = 0;  // UDP sessions
  uint64_t executed = 0;  // UDP calls executed
  uint64_t tokenRuns = 0; // UDP: how often the asked-for token ran
};

// kill(SIGSTOP) returns before the target has stopped: a thread of it may still run for a
// moment (and answer the call the test meant it never to see). Waits until every thread of
// `pid` is in state T, at most 5 s.
inline bool waitStopped(pid_t pid) {
  std::string dir = "/proc/" + std::to_string(pid) + "/task";
  for (int i = 0; i < 5000; ++i) {
    bool all = true;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      FILE* f = std::fopen((e.path() / "stat").c_str(), "r");
      if (f == nullptr) continue;
      char buf[512] = {};
      size_t n = std::fread(buf, 1, sizeof buf - 1, f);
      std::fclose(f);
      const char* close = std::strrchr(buf, ')');
      if (n == 0 || close == nullptr || (close[2] != 'T' && close[2] != 't')) all = false;
    }
    if (!ec && all) return true;
    ::usleep(1000);
  }
  return false;
}

// What a test does to a server in a child process besides talking to it.
class PeerProcess {
 public:
  pid_t pid() const { return child_->pid(); }
  // SIGSTOP returns once the server really is stopped.
  void signal(int sig) {
    ::kill(child_->pid(), sig);
    if (sig == SIGSTOP) (void)waitStopped(child_->pid());
  }
  void kill() {
    child_->kill();
    child_->wait();
  }

 protected:
  PeerProcess() = default;
  ~PeerProcess() = default;

  std::unique_ptr<Child> child_;
};

// A same-host server (TestService under "svc") in a child process.
class HeldServer : public PeerProcess {
 public:
  HeldServer(const std::string& dir, const std::string& name = "svc") {
    child_ = std::make_unique<Child>([&] {
      HeldService impl(entered_, release_);
      return serveReports(impl, dir, name, ready_, commands_, answers_, [](const Exporter& exporter) {
        ServerReport r;
        r.res = measure();
        ExporterStats st = exporter.stats();
        r.bindingsLive = st.bindingsLive;
        r.serverThreads = st.serverThreads;
        r.callsServed = st.callsServed;
        return r;
      });
    });
    char c = 0;
    ok_ = ready_.get(&c, 1) && c == 'k';
  }
  bool ok() const { return ok_; }
  bool waitEntered(int timeoutMs = 10'000) { return entered_.getByte(timeoutMs); }
  void release() { release_.putByte('r'); }
  bool report(ServerReport* out) {
    commands_.putByte('s');
    return answers_.get(out, sizeof *out, 10'000);
  }
  // Waits until no binding and no server thread is left (the clerk reclaimed every dead client).
  bool settled(ServerReport* out) {
    for (int i = 0; i < 2000; ++i) {
      if (!report(out)) return false;
      if (out->bindingsLive == 0 && out->serverThreads == 0) return true;
      ::usleep(5000);
    }
    return false;
  }
  // settled(), and then the same fd and thread counts three times in a row, 10 ms apart: a
  // clerk closes its binding's fds just after it stops counting the binding.
  bool quiet(ServerReport* out) {
    if (!settled(out)) return false;
    for (int same = 0, i = 0; same < 3 && i < 500; ++i) {
      ::usleep(10'000);
      ServerReport next;
      if (!settled(&next)) return false;
      same = next.res.fds == out->res.fds && next.res.threads == out->res.threads ? same + 1 : 0;
      *out = next;
    }
    return true;
  }

 private:
  Pipe ready_, commands_, answers_, entered_, release_;
  bool ok_ = false;
};

// A UDP server (the transport's Svc, which counts executions per token) in a child process.
class UdpPeerServer : public PeerProcess {
 public:
  UdpPeerServer() {
    child_ = std::make_unique<Child>([&] {
      net::testing::Svc::Impl impl;
      net::ServerOptions so;
      so.security.clearText = true;
      net::UdpServer server(so);
      uint16_t port = 0;
      if (server.add("svc", net::testing::Svc::kDescriptor, &impl).isOk()) {
        auto p = server.bind("127.0.0.1:0");
        if (p.isOk() && server.start().isOk()) port = *p;
      }
      ready_.put(&port, sizeof port);
      if (port == 0) return 1;
      for (;;) {
        uint64_t token = 0;
        if (!commands_.get(&token, sizeof token, -1)) return 0;
        ServerReport r;
        r.res = measure();
        r.sessions = server.sessionCount();
        r.executed = server.executed();
        r.tokenRuns = static_cast<uint64_t>(impl.executions(token));
        answers_.put(&r, sizeof r);
      }
    });
    if (!ready_.get(&port_, sizeof port_)) port_ = 0;
  }
  uint16_t port() const { return port_; }
  std::string uri() const { return "udp+clear://127.0.0.1:" + std::to_string(port_) + "/svc"; }
  bool report(uint64_t token, ServerReport* out) {
    commands_.put(&token, sizeof token);
    return answers_.get(out, sizeof *out, 10'000);
  }

 private:
  Pipe ready_, commands_, answers_;
  uint16_t port_ = 0;
};

// The system call a thread of this process is blocked in (-1 when running or unknown), from
// /proc/self/task/<tid>/syscall: lets a test wait until a call really is inside a wait.
inline long blockedSyscall(pid_t tid) {
  std::string path = "/proc/self/task/" + std::to_string(tid) + "/syscall";
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return -1;
  long nr = -1;
  if (std::fscanf(f, "%ld", &nr) != 1) nr = -1;
  std::fclose(f);
  return nr;
}

inline pid_t currentTid() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

}  // namespace lrpc::campaign
