// Server processes for the integration tests: fork one, wait until it serves, kill it.
#pragma once

#include <unistd.h>

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
  TestServer(const std::string& dir, const std::string& name, ServerOptions options = {}) {
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
