// Helpers for cross-process tests: a temporary names directory, forked children that die
// with the test (PR_SET_PDEATHSIG, plus an alarm as a watchdog), and a pipe to say "ready".
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>

namespace lrpc::testing {

// The uid the cross-uid tests become in a forked child (they need root to switch).
constexpr uid_t kNobody = 65534;

// Group first: once the uid is dropped, the group can no longer be changed.
inline bool becomeNobody() {
  return ::setresgid(kNobody, kNobody, kNobody) == 0 && ::setresuid(kNobody, kNobody, kNobody) == 0;
}

// A fresh private directory for names, removed at the end.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/lrpc-test-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A one-way pipe for small messages between parent and child.
class Pipe {
 public:
  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) == 0) {
      r_ = fds[0];
      w_ = fds[1];
    }
  }
  ~Pipe() {
    if (r_ >= 0) ::close(r_);
    if (w_ >= 0) ::close(w_);
  }
  void put(const void* p, size_t n) {
    ssize_t r = ::write(w_, p, n);
    (void)r;
  }
  // Reads exactly n bytes, waiting at most timeoutMs; false on timeout or EOF.
  bool get(void* p, size_t n, int timeoutMs = 30'000) {
    size_t got = 0;
    while (got < n) {
      pollfd pfd{r_, POLLIN, 0};
      if (::poll(&pfd, 1, timeoutMs) <= 0) return false;
      ssize_t r = ::read(r_, static_cast<char*>(p) + got, n - got);
      if (r <= 0) return false;
      got += static_cast<size_t>(r);
    }
    return true;
  }
  void putByte(char c = 'r') { put(&c, 1); }
  bool getByte(int timeoutMs = 30'000) {
    char c;
    return get(&c, 1, timeoutMs);
  }

 private:
  int r_ = -1;
  int w_ = -1;
};

// A forked child running `body`; its exit code is body's return value. Killed (SIGKILL) and
// reaped by the destructor if still running.
class Child {
 public:
  explicit Child(const std::function<int()>& body, unsigned watchdogSeconds = 120) {
    pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(99);
      ::alarm(watchdogSeconds);
      ::_exit(body());
    }
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  void kill(int sig = SIGKILL) { ::kill(pid_, sig); }
  // Waits for the exit and returns the exit code (or 128 + signal).
  int wait() {
    int st = 0;
    ::waitpid(pid_, &st, 0);
    reaped_ = true;
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return -1;
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

}  // namespace lrpc::testing
