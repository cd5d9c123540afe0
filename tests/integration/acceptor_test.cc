// The acceptor of an exported name, out of file descriptors: accept() fails with EMFILE while
// the connection stays queued and the socket readable. It must wait for descriptors to come
// back instead of retrying in a loop that burns a core.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "runtime/base/fd.h"
#include "runtime/exporter.h"
#include "runtime/names.h"
#include "tests/integration/harness.h"
#include "tests/integration/raw_client.h"
#include "tests/integration/test_service.h"

namespace lrpc::testing {
namespace {

// User plus system CPU time of process `pid`, in clock ticks (/proc/<pid>/stat fields 14, 15).
long cpuTicks(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::istringstream rest(all.substr(all.rfind(')') + 2));  // after "pid (comm) "
  std::string field;
  long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stol(field);
    if (i == 15) stime = std::stol(field);
  }
  return utime + stime;
}

TEST(AcceptorTest, OutOfDescriptorsWaitsInsteadOfSpinning) {
  TempDir dir;
  Pipe ready;
  Child server([&] {
    TestService::Server impl;
    ExporterOptions options;
    options.dir = dir.path();
    Exporter exporter(options);
    if (!exporter.add("svc", TestService::kDescriptor, static_cast<TestService::Server*>(&impl)).isOk()) return 1;
    // Every descriptor below the lowest free one is in use, so with the limit there, the
    // acceptor's next accept() fails with EMFILE.
    int lowest = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (lowest < 0) return 2;
    ::close(lowest);
    rlimit rl{};
    ::getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = static_cast<rlim_t>(lowest);
    if (::setrlimit(RLIMIT_NOFILE, &rl) != 0) return 3;
    ready.putByte('k');
    for (;;) ::pause();
  });
  char c = 0;
  ASSERT_TRUE(ready.get(&c, 1));
  ASSERT_EQ(c, 'k');

  // A connection the server cannot accept: it waits in the listen queue.
  OwnedFd sock = connectToName(dir.path(), "svc");
  ASSERT_TRUE(sock.valid()) << std::strerror(errno);

  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the acceptor has met EMFILE
  const long before = cpuTicks(server.pid());
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const long used = cpuTicks(server.pid()) - before;
  // A retry loop would use the whole second; waiting between retries uses almost none.
  EXPECT_LT(used, ::sysconf(_SC_CLK_TCK) / 4) << "the acceptor spun on EMFILE: " << used << " ticks in one second";
  EXPECT_EQ(::kill(server.pid(), 0), 0);
}

}  // namespace
}  // namespace lrpc::testing
