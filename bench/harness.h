#pragma once
// The benchmark's process plumbing: pinning, server processes, CPU clocks, shared memory and
// a pair of network namespaces joined by a veth. Every path in bench/ uses the same pieces so
// that the columns of the table differ only in the thing being measured.
//
// Server processes are forked and then exec'd again as "lrpc_bench --server KIND READY_FD
// ARGS..." (see serverMain in main.cc). The exec makes the child a fresh single-threaded
// process even when the parent already runs library threads (gRPC starts some on first use),
// so "fork before any threads" holds for every server, whatever ran before it.

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "runtime/base/fd.h"
#include "runtime/base/status.h"
#include "runtime/shm.h"
#include "tests/testing/netns.h"
#include "tests/testing/socket_address.h"

namespace lrpc::bench {

// The CPUs of the 2-core machine: the benchmark (client) thread runs on kClientCpu, servers
// on kServerCpu unless a path asks for the same core.
constexpr int kClientCpu = 0;
constexpr int kServerCpu = 1;

// Pins the calling thread (and the threads it creates later) to one CPU, or with kAnyCpu
// lets it run on every CPU.
constexpr int kAnyCpu = -1;
Status pinToCpu(int cpu);

// Nanoseconds of CPU time this whole process (all threads) has used.
uint64_t processCpuNs();

// A memfd mapped read-write (runtime/shm.h) with its pages faulted in, so that no timed call
// takes a page's first touch (SharedMemory maps without MAP_POPULATE). The fd can be handed to
// a server process, which maps the same pages with adoptShared().
Result<SharedMemory> createShared(size_t size);
// Maps an inherited memfd of `size` bytes (server side), pages faulted in.
Result<SharedMemory> adoptShared(int fd, size_t size);

// What to start: the server kind (a name serverMain knows), its arguments, the fds it
// inherits, its CPU (kAnyCpu: all of them), and optionally a network namespace (its path, as
// NetnsPair::nsPath gives it).
struct ServerSpec {
  std::string kind;
  std::vector<std::string> args;
  std::vector<int> passFds;
  int cpu = kServerCpu;
  std::string netns;
};

// A server process, running until this object goes away (SIGTERM, then SIGKILL).
class ServerProcess {
 public:
  // Forks, pins, enters the namespace, execs and waits until the server says it is ready.
  static Result<std::unique_ptr<ServerProcess>> start(const ServerSpec& spec);
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  pid_t pid() const noexcept { return pid_; }
  // What the server said when it became ready (e.g. the port it bound), else empty.
  const std::string& readyInfo() const noexcept { return readyInfo_; }
  // The server process's CPU time (all its threads), ns.
  uint64_t cpuNs() const noexcept;

 private:
  ServerProcess(pid_t pid, clockid_t clock) noexcept : pid_(pid), clock_(clock) {}
  pid_t pid_;
  clockid_t clock_;
  std::string readyInfo_;
};

// Server side of the ready handshake: the server calls this once it accepts calls, with
// anything the client needs to know (at most 200 bytes, e.g. the port it bound).
void signalReady(int readyFd, const std::string& info = {});

// The network columns' two namespaces are the tests' fixture (tests/testing/netns.h): the server
// runs in A (nsPath(true), address ipA()), the client in B.
using testing::inetAddr;
using testing::NetnsPair;
using testing::NetnsScope;

// A socket of `type` (SOCK_DGRAM, SOCK_STREAM) made in `pair`'s client namespace and connected
// to its server's address at `port`: the client end of a raw floor.
Result<OwnedFd> connectToServer(const NetnsPair& pair, int type, uint16_t port);

// A unique path for a Unix socket of this benchmark process.
std::string socketPath(const std::string& tag);

// Reads or writes exactly n bytes (retrying short transfers and EINTR).
Status readFull(int fd, void* buf, size_t n);
Status writeFull(int fd, const void* buf, size_t n);

}  // namespace lrpc::bench
