// Access control across uids (needs root to become another uid in a forked child; skipped
// otherwise): names cannot be hijacked by another uid or a second exporter, nothing planted
// in a shared names directory redirects a client, and one binding's memfd is never reachable
// from another binding or another uid. uid_test (tests/integration/) covers who may import.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <random>
#include <set>
#include <thread>

#include "runtime/exporter.h"
#include "runtime/import.h"
#include "runtime/local_binding.h"
#include "runtime/names.h"
#include "tests/integration/servers.h"

namespace lrpc::campaign {
namespace {

using lrpc::testing::becomeNobody;
using lrpc::testing::Child;
using lrpc::testing::kNobody;
using lrpc::testing::Pipe;
using lrpc::testing::TempDir;
using lrpc::testing::TestServer;
using lrpc::testing::TestService;

class Access : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to switch uids";
    // A shared names directory, /tmp style: anyone may create, only owners may remove.
    ::chmod(dir_.path().c_str(), 01777);
  }
  ImportOptions opts() const {
    ImportOptions o;
    o.dir = dir_.path();
    return o;
  }
  void expectServes(const std::string& name) {
    Result<TestService::Client> c = lrpc::import<TestService>(name, opts());
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    EXPECT_EQ(*c->add(40, 2), 42);
  }
  TempDir dir_;
};

// In a child as nobody: 0 when every step was refused as it must be, else the failing step.
TEST_F(Access, AccessOtherUidCannotHijackALiveName) {
  TestServer server(dir_.path(), "svc");
  ASSERT_TRUE(server.ok());
  std::string dir = dir_.path();
  Child attacker([&] {
    if (!becomeNobody()) return 90;
    TestService::Server impl;
    ExporterOptions o;
    o.dir = dir;
    Exporter exporter(o);
    if (exporter.add("svc", TestService::kDescriptor, static_cast<TestService::Server*>(&impl)).isOk()) return 1;
    if (::unlink((dir + "/svc.sock").c_str()) == 0) return 2;   // sticky: not its file
    if (::unlink((dir + "/svc.lock").c_str()) == 0) return 3;
    if (int fd = ::open((dir + "/mine").c_str(), O_CREAT | O_WRONLY, 0600); fd >= 0) ::close(fd);
    if (::rename((dir + "/mine").c_str(), (dir + "/svc.sock").c_str()) == 0) return 4;
    return 0;
  });
  EXPECT_EQ(attacker.wait(), 0);
  expectServes("svc");
}

TEST_F(Access, AccessSecondExporterCannotTakeOverALiveName) {
  TestServer first(dir_.path(), "svc");
  ASSERT_TRUE(first.ok());
  for (int i = 0; i < 20; ++i) {
    TestServer second(dir_.path(), "svc");
    EXPECT_FALSE(second.ok());
    EXPECT_EQ(second.result(), '0' + static_cast<int>(Errc::kAlreadyExists));
  }
  expectServes("svc");
}

TEST_F(Access, AccessPlantedSymlinkToAnotherUidsServerIsRefused) {
  // Another uid serves "evil" and plants victim.sock -> evil.sock in the shared directory.
  std::string dir = dir_.path();
  Pipe ready;
  Child attacker([&] {
    if (!becomeNobody()) return 90;
    TestService::Server impl;
    ExporterOptions o;
    o.dir = dir;
    o.allowUids = {0};  // so that a root client can connect at all
    Exporter exporter(o);
    if (!exporter.add("evil", TestService::kDescriptor, static_cast<TestService::Server*>(&impl)).isOk()) return 1;
    if (::symlink((dir + "/evil.sock").c_str(), (dir + "/victim.sock").c_str()) != 0) return 2;
    ready.putByte();
    for (;;) ::pause();
  });
  ASSERT_TRUE(ready.getByte());
  Result<TestService::Client> c = lrpc::import<TestService>("victim", opts());
  ASSERT_FALSE(c.isOk());
  EXPECT_EQ(c.status().code(), Errc::kPermissionDenied) << c.status().toString();
  // The same for the planted name's direct target: served by an untrusted uid.
  EXPECT_EQ(lrpc::import<TestService>("evil", opts()).status().code(), Errc::kPermissionDenied);
}

TEST_F(Access, AccessPlantedFilesDoNotRedirect) {
  std::string dir = dir_.path();
  std::string outside = dir + "/outside-target";
  Child planter([&] {
    if (!becomeNobody()) return 90;
    // A plain file where a socket would be, a lock-file symlink pointing at a file of its own,
    // and a squatted lock file.
    if (int fd = ::open((dir + "/plain.sock").c_str(), O_CREAT | O_WRONLY, 0666); fd >= 0) ::close(fd);
    if (int fd = ::open(outside.c_str(), O_CREAT | O_WRONLY, 0666); fd >= 0) ::close(fd);
    if (::symlink(outside.c_str(), (dir + "/linked.lock").c_str()) != 0) return 1;
    if (::symlink("/etc/passwd", (dir + "/linked2.sock").c_str()) != 0) return 2;
    return 0;
  });
  ASSERT_EQ(planter.wait(), 0);
  EXPECT_EQ(lrpc::import<TestService>("plain", opts()).status().code(), Errc::kNotFound);
  Status s = lrpc::import<TestService>("linked2", opts()).status();
  EXPECT_FALSE(s.isOk());
  // Exporting over a planted lock symlink fails; the file it points at is not written or locked.
  struct stat before {};
  ASSERT_EQ(::stat(outside.c_str(), &before), 0);
  TestServer server(dir_.path(), "linked");
  EXPECT_FALSE(server.ok());
  struct stat after {};
  ASSERT_EQ(::stat(outside.c_str(), &after), 0);
  EXPECT_EQ(after.st_size, before.st_size);
  EXPECT_EQ(after.st_uid, kNobody);
}

TEST_F(Access, AccessNamesDirOwnedByAnotherUidIsRefused) {
  std::string dir = dir_.path() + "/theirs";
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  ASSERT_EQ(::chown(dir.c_str(), kNobody, kNobody), 0);
  ImportOptions o;
  o.dir = dir;
  EXPECT_EQ(lrpc::import<TestService>("svc", o).status().code(), Errc::kPermissionDenied);
  ExporterOptions so;
  so.dir = dir;
  Exporter exporter(so);
  TestService::Server impl;
  EXPECT_EQ(exporter.add("svc", TestService::kDescriptor, static_cast<TestService::Server*>(&impl)).code(),
            Errc::kPermissionDenied);
}

// Two bindings of one server: each has its own region (another memfd, another inode), and a
// client scribbling over all of its own region never changes another binding's calls.
TEST_F(Access, AccessHostileBindingCannotReachAnothersMemfd) {
  TestServer server(dir_.path(), "svc");
  ASSERT_TRUE(server.ok());
  Result<TestService::Client> honest = lrpc::import<TestService>("svc", opts());
  Result<TestService::Client> hostile = lrpc::import<TestService>("svc", opts());
  ASSERT_TRUE(honest.isOk() && hostile.isOk());
  LocalBinding* hb = hostile->binding()->local;
  LocalBinding* ab = honest->binding()->local;
  // The regions: different mappings of different memfds.
  std::byte* hostileBase = reinterpret_cast<std::byte*>(hb->control(0)) - hb->layout().astackOffset(0);
  std::byte* honestBase = reinterpret_cast<std::byte*>(ab->control(0)) - ab->layout().astackOffset(0);
  ASSERT_NE(hostileBase, honestBase);
  int memfds = 0;
  std::set<ino_t> inodes;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    if (std::filesystem::read_symlink(e.path(), ec).string().rfind("/memfd:lrpc-astacks-", 0) != 0) continue;
    struct stat st {};
    if (::stat(e.path().c_str(), &st) == 0) inodes.insert(st.st_ino);
    ++memfds;
  }
  // One region memfd per binding, each its own inode: nothing is shared between bindings.
  EXPECT_GE(memfds, 2);
  EXPECT_EQ(inodes.size(), static_cast<size_t>(memfds));
  std::atomic<bool> stop{false};
  std::thread vandal([&] {
    std::mt19937 rng(3);
    size_t bytes = hb->layout().regionBytes();
    while (!stop.load(std::memory_order_relaxed)) {
      for (size_t i = 64; i < bytes; i += 4) {
        __atomic_store_n(reinterpret_cast<uint32_t*>(hostileBase + i), static_cast<uint32_t>(rng()), __ATOMIC_RELAXED);
      }
    }
  });
  for (int i = 0; i < 2000; ++i) {
    Result<int32_t> r = honest->add(i, 1);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    ASSERT_EQ(*r, i + 1);
  }
  stop.store(true);
  vandal.join();
  expectServes("svc");
}

// Another uid cannot reach a server's or a client's memfds through /proc, pidfd_getfd or
// process_vm_readv.
TEST_F(Access, AccessOtherUidCannotReachMemfdsThroughProc) {
  TestServer server(dir_.path(), "svc");
  ASSERT_TRUE(server.ok());
  Result<TestService::Client> c = lrpc::import<TestService>("svc", opts());
  ASSERT_TRUE(c.isOk());
  ASSERT_TRUE(c->echo(std::vector<uint8_t>(100'000, 1)).isOk());  // out-of-band segments exist too
  pid_t serverPid = server.pid(), clientPid = ::getpid();
  Child snoop([&] {
    if (!becomeNobody()) return 90;
    int step = 0;
    for (pid_t pid : {serverPid, clientPid}) {
      std::string proc = "/proc/" + std::to_string(pid);
      ++step;
      std::error_code ec;
      std::filesystem::directory_iterator it(proc + "/fd", ec);
      if (!ec) return step;  // could list its fds
      for (int fd = 0; fd < 64; ++fd) {
        int got = ::open((proc + "/fd/" + std::to_string(fd)).c_str(), O_RDONLY);
        if (got >= 0) return 10 + step;
      }
      if (::open((proc + "/mem").c_str(), O_RDONLY) >= 0) return 20 + step;
      std::filesystem::directory_iterator mf(proc + "/map_files", ec);
      if (!ec) return 30 + step;
      int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
      if (pidfd >= 0) {
        for (int fd = 0; fd < 64; ++fd) {
          if (::syscall(SYS_pidfd_getfd, pidfd, fd, 0) >= 0) return 40 + step;
        }
      }
      char buf[16];
      iovec local{buf, sizeof buf}, remote{reinterpret_cast<void*>(0x400000), sizeof buf};
      if (::process_vm_readv(pid, &local, 1, &remote, 1, 0) >= 0) return 50 + step;
    }
    return 0;
  });
  EXPECT_EQ(snoop.wait(), 0);
}

}  // namespace
}  // namespace lrpc::campaign
