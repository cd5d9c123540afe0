// A same-host server process for tests: forked, it exports what the test adds, and serves
// until it is killed.
#pragma once

#include <unistd.h>

#include <functional>
#include <memory>
#include <string>

#include "runtime/exporter.h"
#include "tests/integration/harness.h"

namespace lrpc::testing {

// Forks a process whose Exporter (`options`, exporting in `dir`) serves what `setup` adds to
// it. `setup` returns what must live as long as the exports (the implementations), or null
// when it could not add them. The constructor returns once the process serves, or failed.
class ExporterProcess {
 public:
  using Setup = std::function<std::shared_ptr<void>(Exporter&)>;
  ExporterProcess(const std::string& dir, const Setup& setup, ExporterOptions options = {})
      : child_([&] {
          options.dir = dir;
          Exporter exporter(options);
          const std::shared_ptr<void> impls = setup(exporter);
          ready_.putByte(impls ? 'k' : 'x');
          if (!impls) return 1;
          for (;;) ::pause();
        }) {
    char c = 0;
    up_ = ready_.get(&c, 1) && c == 'k';
  }
  bool up() const { return up_; }
  pid_t pid() const { return child_.pid(); }
  void kill() {
    child_.kill();
    (void)child_.wait();
  }

 private:
  Pipe ready_;  // declared before child_: the child writes it
  Child child_;
  bool up_ = false;
};

// The Setup for one object of `Impl` exported as `Iface` under `name`.
template <class Iface, class Impl>
ExporterProcess::Setup exportOne(std::string name) {
  return [name = std::move(name)](Exporter& exporter) -> std::shared_ptr<void> {
    auto impl = std::make_shared<Impl>();
    return exporter.add<Iface>(name, *impl).isOk() ? impl : nullptr;
  };
}

}  // namespace lrpc::testing
