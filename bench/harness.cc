#include "bench/harness.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <chrono>
#include <thread>

namespace lrpc::bench {

namespace {

cpu_set_t cpuSet(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (cpu == kAnyCpu) {
    for (int i = 0; i < get_nprocs(); ++i) CPU_SET(i, &set);
  } else {
    CPU_SET(cpu, &set);
  }
  return set;
}

}  // namespace

Status pinToCpu(int cpu) {
  cpu_set_t set = cpuSet(cpu);
  if (sched_setaffinity(0, sizeof(set), &set) != 0) return Status::fromErrno(errno, "sched_setaffinity");
  return {};
}

uint64_t processCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

namespace {

// Faults in every page of `m` without touching its bytes (the peer may have written them).
// Best effort: where the kernel lacks MADV_POPULATE_WRITE, the warm-up faults them in instead.
Result<SharedMemory> prefaulted(Result<SharedMemory> m) {
  if (m) (void)madvise(m->data(), m->size(), MADV_POPULATE_WRITE);
  return m;
}

}  // namespace

Result<SharedMemory> createShared(size_t size) { return prefaulted(SharedMemory::create("lrpc-bench", size)); }

Result<SharedMemory> adoptShared(int fd, size_t size) { return prefaulted(SharedMemory::adopt(OwnedFd(fd), size)); }

Result<std::unique_ptr<ServerProcess>> ServerProcess::start(const ServerSpec& spec) {
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0) return Status::fromErrno(errno, "pipe2");
  OwnedFd readEnd(ready[0]);
  OwnedFd writeEnd(ready[1]);

  // Everything the child needs is built before fork: between fork and exec it may only
  // make async-signal-safe calls.
  std::vector<std::string> words = {"lrpc_bench", "--server", spec.kind, std::to_string(ready[1])};
  words.insert(words.end(), spec.args.begin(), spec.args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  cpu_set_t cpus = cpuSet(spec.cpu);
  pid_t parent = getpid();
  // The executable's path, read before fork: exec'ing "/proc/self/exe" itself would start
  // whatever runs this process, which under valgrind (bench/README.md, "Instructions per
  // call") is valgrind's tool and not this benchmark.
  char self[PATH_MAX];
  const ssize_t selfLen = readlink("/proc/self/exe", self, sizeof self - 1);
  if (selfLen <= 0) return Status::fromErrno(errno, "readlink /proc/self/exe");
  self[selfLen] = '\0';

  pid_t pid = fork();
  if (pid < 0) return Status::fromErrno(errno, "fork");
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the benchmark
    if (getppid() != parent) _exit(121);
    if (sched_setaffinity(0, sizeof(cpus), &cpus) != 0) _exit(122);
    // Not enterNetns (tests/testing/netns.h): its error path allocates, and between fork and
    // exec only async-signal-safe calls are allowed.
    if (!spec.netns.empty()) {
      int ns = open(spec.netns.c_str(), O_RDONLY | O_CLOEXEC);
      if (ns < 0 || setns(ns, CLONE_NEWNET) != 0) _exit(123);
    }
    fcntl(ready[1], F_SETFD, 0);
    for (int fd : spec.passFds) fcntl(fd, F_SETFD, 0);
    execv(self, argv.data());
    _exit(127);
  }
  writeEnd = OwnedFd();

  clockid_t clock;
  if (clock_getcpuclockid(pid, &clock) != 0) clock = CLOCK_MONOTONIC;  // never: our own child
  std::unique_ptr<ServerProcess> server(new ServerProcess(pid, clock));

  // The server writes 'R' and its info, then closes the pipe; EOF without 'R' means it died.
  std::string said;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd pfd{readEnd.get(), POLLIN, 0};
    int n = poll(&pfd, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    char buf[256];
    ssize_t r = read(readEnd.get(), buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    said.append(buf, static_cast<size_t>(r));
  }
  if (said.empty() || said[0] != 'R') {
    return Status(Errc::kIoError, "server '" + spec.kind + "' did not start (exited or timed out)");
  }
  server->readyInfo_ = said.substr(1);
  return server;
}

uint64_t ServerProcess::cpuNs() const noexcept {
  timespec ts{};
  if (clock_gettime(clock_, &ts) != 0) return 0;
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

ServerProcess::~ServerProcess() {
  kill(pid_, SIGTERM);
  for (int i = 0; i < 200; ++i) {  // up to 1 s to exit cleanly
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
}

void signalReady(int readyFd, const std::string& info) {
  // Appended, not literal + string: g++ 12 -O3 warns falsely (-Wrestrict) on the latter.
  std::string msg = "R";
  msg.append(info, 0, 200);
  if (!writeFull(readyFd, msg.data(), msg.size())) _exit(124);
  close(readyFd);
}

Result<OwnedFd> connectToServer(const NetnsPair& pair, int type, uint16_t port) {
  OwnedFd s;
  {
    Result<NetnsScope> in = NetnsScope::enter(pair.nsPath(false));
    if (!in) return in.status();
    s = OwnedFd(::socket(AF_INET, type | SOCK_CLOEXEC, 0));
  }
  if (!s.valid()) return Status::fromErrno(errno, "socket");
  sockaddr_in to = inetAddr(pair.ipA(), port);
  if (::connect(s.get(), reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) return Status::fromErrno(errno, "connect");
  return s;
}

std::string socketPath(const std::string& tag) {
  return "/tmp/lrpc-bench-" + std::to_string(getpid()) + "-" + tag + ".sock";
}

Status readFull(int fd, void* buf, size_t n) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Status::fromErrno(errno, "read");
    if (r == 0) return Status(Errc::kPeerDied, "connection closed");
    p += r;
    n -= static_cast<size_t>(r);
  }
  return {};
}

Status writeFull(int fd, const void* buf, size_t n) {
  const auto* p = static_cast<const char*>(buf);
  while (n > 0) {
    ssize_t r = write(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Status::fromErrno(errno, "write");
    p += r;
    n -= static_cast<size_t>(r);
  }
  return {};
}

}  // namespace lrpc::bench
