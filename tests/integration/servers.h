// Server processes for the integration tests: fork one, wait until it serves, kill it.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iterator>
#include <memory>
#include <string>

#include "runtime/exporter.h"
#include "tests/integration/harness.h"
#include "tests/integration/test_service.h"

namespace lrpc::testing {

// Forks a process that exports a TestService under `name` in `dir` and serves until killed.
// The constructor returns once it serves (or the child failed: ok() is false).
class TestServer {
 public:
  TestServer(const std::string& dir, const std::string& name, ExporterOptions options = {}) {
    options.dir = dir;
    child_ = std::make_unique<Child>([&] {
      TestService::Server impl;
      Exporter exporter(options);
      Status s = exporter.add(name, TestService::kDescriptor, static_cast<TestService::Server*>(&impl));
      char c = s.isOk() ? 'k' : static_cast<char>('0' + static_cast<int>(s.code()));
      ready_.put(&c, 1);
      if (!s.isOk()) return 1;
      for (;;) ::pause();
    });
    char c = 0;
    ok_ = ready_.get(&c, 1) && c == 'k';
    result_ = c;
  }
  bool ok() const { return ok_; }
  char result() const { return result_; }
  pid_t pid() const { return child_->pid(); }
  void kill() {
    child_->kill();
    child_->wait();
  }

 private:
  Pipe ready_;
  std::unique_ptr<Child> child_;
  bool ok_ = false;
  char result_ = 0;
};

}  // namespace lrpc::testing

namespace lrpc::testing {

// What a server process reports about itself.
struct ServerSnapshot {
  int fds;
  int threads;
  long rssKb;
  uint64_t bindingsLive;
  uint64_t serverThreads;
  uint64_t callsServed;
};

inline ServerSnapshot snapshotSelf(const Exporter& exporter) {
  ServerSnapshot s{};
  s.fds = static_cast<int>(std::distance(std::filesystem::directory_iterator("/proc/self/fd"),
                                         std::filesystem::directory_iterator{}));
  s.threads = static_cast<int>(std::distance(std::filesystem::directory_iterator("/proc/self/task"),
                                             std::filesystem::directory_iterator{}));
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    long pages = 0, rss = 0;
    if (std::fscanf(f, "%ld %ld", &pages, &rss) == 2) s.rssKb = rss * (::sysconf(_SC_PAGESIZE) / 1024);
    std::fclose(f);
  }
  ExporterStats st = exporter.stats();
  s.bindingsLive = st.bindingsLive;
  s.serverThreads = st.serverThreads;
  s.callsServed = st.callsServed;
  return s;
}

// The body of a server process that reports on itself: exports `impl` as a TestService under
// `name` in `dir` and says 'k' on `ready` ('x': the export failed, exit code 1), then answers
// each byte on `commands` with `report(exporter)` (a plain struct) on `answers`, until
// `commands` closes (exit code 0).
template <class Report>
int serveReports(TestService::Server& impl, const std::string& dir, const std::string& name, Pipe& ready,
                 Pipe& commands, Pipe& answers, Report report) {
  ExporterOptions options;
  options.dir = dir;
  Exporter exporter(options);
  Status s = exporter.add(name, TestService::kDescriptor, &impl);
  ready.putByte(s.isOk() ? 'k' : 'x');
  if (!s.isOk()) return 1;
  for (;;) {
    if (!commands.getByte(-1)) return 0;
    auto answer = report(exporter);
    answers.put(&answer, sizeof answer);
  }
}

// A TestService server process that answers snapshot requests over a pipe.
class ObservedServer {
 public:
  ObservedServer(const std::string& dir, const std::string& name) {
    child_ = std::make_unique<Child>([&] {
      TestService::Server impl;
      return serveReports(impl, dir, name, ready_, commands_, answers_, snapshotSelf);
    });
    char c = 0;
    ok_ = ready_.get(&c, 1) && c == 'k';
  }
  bool ok() const { return ok_; }
  bool snapshot(ServerSnapshot* out) {
    commands_.putByte('s');
    return answers_.get(out, sizeof *out);
  }

 private:
  Pipe ready_, commands_, answers_;
  std::unique_ptr<Child> child_;
  bool ok_ = false;
};

}  // namespace lrpc::testing
