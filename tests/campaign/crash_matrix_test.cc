// The crash matrix: SIGKILL the client or the server at each distinct point of a call, each
// point rounds() times (LRPC_CAMPAIGN_ROUNDS), and check that the survivor sees the right
// error in bounded time, holds no more fds, memfds, threads or memory than before, and serves
// the next peer correctly.
//
// How each point is hit (precisely unless it says "statistically"):
//   during import       server: SIGSTOPped, the client's import is seen blocked in poll() for
//                       the Welcome, then SIGKILL. client: a raw client sends its Hello and is
//                       killed before reading the Welcome; and statistically, a real import
//                       killed after a random 0-3 ms.
//   before publish      the A-stack is bound and started, no call in flight.
//   after publish       the parent maps the client's A-stack region (/proc/<pid>/fd, the
//                       memfd) and kills the moment the call doorbell changes; for a server
//                       kill the server is SIGSTOPped first, so its handler never saw the call.
//   inside the handler  the handler writes "entered" to a pipe and waits for "release".
//   after the return    the handler is released and the kill follows the moment the return
//                       doorbell carries the call's sequence.
//   out-of-band         a 100 001-byte echo (segments both ways) held inside its handler;
//                       and statistically, a stream of 200 KB echoes killed after 0-5 ms.
//   retransmission      UDP: the server is SIGSTOPped until the client's channel has counted a
//                       retransmission, then the server (or the client) is killed.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <thread>
#include <utility>

#include "runtime/astack.h"
#include "runtime/import.h"
#include "runtime/local_binding.h"
#include "runtime/names.h"
#include "runtime/protocol.h"
#include "runtime/shm.h"
#include "tests/campaign/crash_peers.h"
#include "tests/integration/per_mode.h"
#include "tests/integration/raw_client.h"
#include "transport/client.h"

namespace lrpc::campaign {
namespace {

using lrpc::testing::connectToName;
using lrpc::testing::kTransferModeCount;
using lrpc::testing::kTransferModes;
using lrpc::testing::TempDir;
using lrpc::testing::testServiceHello;

// The client process's A-stack region, mapped by the test through /proc/<pid>/fd: lets the
// test see the doorbells of a call it does not make itself.
class RegionWatch {
 public:
  bool open(pid_t pid) {
    std::string dir = "/proc/" + std::to_string(pid) + "/fd";
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      std::error_code lec;
      std::string target = std::filesystem::read_symlink(e.path(), lec).string();
      if (lec || target.rfind("/memfd:lrpc-astacks-", 0) != 0) continue;
      OwnedFd fd(::open(e.path().c_str(), O_RDWR | O_CLOEXEC));
      struct stat st;
      if (!fd.valid() || ::fstat(fd.get(), &st) != 0) return false;
      // The client made it with SharedMemory::create, so it carries the size seals adopt asks for.
      Result<SharedMemory> region = SharedMemory::adopt(std::move(fd), static_cast<size_t>(st.st_size));
      if (!region) return false;
      region_.emplace(std::move(*region));
      return true;
    }
    return false;
  }
  AStackControl* control(uint32_t index) const {
    return reinterpret_cast<AStackControl*>(region_->data() + layout_.astackOffset(index));
  }
  ReturnControl* returnControl(uint32_t index) const {
    return reinterpret_cast<ReturnControl*>(region_->data() + layout_.returnOffset(index));
  }
  uint32_t first(uint32_t procedure) const { return layout_.procedure(procedure).firstAStack; }

 private:
  RegionLayout layout_ = *RegionLayout::compute(TestService::kDescriptor);
  std::optional<SharedMemory> region_;  // empty until open() found it
};

// Spins until `pred` holds, at most `ms` milliseconds.
template <class Pred>
bool spinUntil(Pred pred, int ms = 10'000) {
  auto start = Clock::now();
  while (!pred()) {
    if (msSince(start) > ms) return false;
    std::this_thread::yield();
  }
  return true;
}

uint32_t seqOf(const std::atomic<uint32_t>& word) { return word.load(std::memory_order_acquire); }

// ---------------------------------------------------------------------------------------
// Client killed: the server survives.

class KillClient : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<HeldServer>(dir_.path());
    ASSERT_TRUE(server_->ok());
    // One honest binding first: the first binding allocates lasting things (malloc arenas).
    expectServes(0);
    ASSERT_TRUE(server_->quiet(&before_));
  }

  ImportOptions opts(int round) const {
    ImportOptions o;
    o.dir = dir_.path();
    o.mode = kTransferModes[((round % kTransferModeCount) + kTransferModeCount) % kTransferModeCount];
    return o;
  }

  // An honest client from this process: the server still serves, correctly.
  void expectServes(int round) {
    Result<TestService::Client> c = lrpc::import<TestService>("svc", opts(round));
    ASSERT_TRUE(c.isOk()) << "round " << round << ": " << c.status().toString();
    Result<int32_t> sum = c->add(round, 1);
    ASSERT_TRUE(sum.isOk()) << sum.status().toString();
    EXPECT_EQ(*sum, round + 1);
  }

  // After the rounds: every binding reclaimed, nothing more held than before.
  void expectNothingLeaked(const char* point) {
    ServerReport after;
    // The clerk counts a binding gone before it has closed the binding's fds: wait for both.
    for (int i = 0; i < 500; ++i) {
      ASSERT_TRUE(server_->settled(&after)) << "bindings " << after.bindingsLive << " threads " << after.serverThreads;
      if (after.res.fds == before_.res.fds && after.res.memfds == before_.res.memfds &&
          after.res.threads == before_.res.threads) {
        break;
      }
      ::usleep(10'000);
    }
    std::printf("[campaign] %s: server before {%s}, after %d rounds {%s}\n", point, describe(before_.res).c_str(),
                rounds(), describe(after.res).c_str());
    EXPECT_EQ(after.res.fds, before_.res.fds);
    EXPECT_EQ(after.res.memfds, before_.res.memfds);
    EXPECT_EQ(after.res.threads, before_.res.threads);
    if (kRssIsMeaningful) {
      EXPECT_LT(after.res.rssKb, before_.res.rssKb + 16 * 1024);
    }
    expectServes(1);
  }

  // Forks a client that imports, does `body` after saying 'i', and is then killed by the test.
  template <class Body>
  std::unique_ptr<Child> client(int round, Pipe& imported, Body body) {
    ImportOptions o = opts(round);
    return std::make_unique<Child>([&imported, o, body] {
      Result<TestService::Client> c = lrpc::import<TestService>("svc", o);
      if (!c.isOk()) return 1;
      body(*c, imported);
      for (;;) ::pause();
    });
  }

  // One round: a client that says 'i' and makes `call`, which the server holds in its handler;
  // killed there, and then the handler is let go, to return to a dead client.
  template <class Call>
  void killWhileHeld(int round, Call call) {
    Pipe imported;
    auto c = client(round, imported, [call](TestService::Client& cl, Pipe& p) {
      p.putByte();
      call(cl);
    });
    ASSERT_TRUE(imported.getByte()) << "round " << round;
    ASSERT_TRUE(server_->waitEntered()) << "round " << round;
    c->kill();
    c->wait();
    server_->release();
  }

  TempDir dir_;
  std::unique_ptr<HeldServer> server_;
  ServerReport before_;
};

TEST_F(KillClient, KillClientDuringImportAfterHello) {
  std::string dir = dir_.path();
  for (int round = 0; round < rounds(); ++round) {
    Pipe said;
    Child raw([&] {
      OwnedFd sock = connectToName(dir, "svc");
      if (!sock.valid()) return 1;
      const detail::Hello hello = testServiceHello(TransferMode::kAdaptive);
      if (!detail::sendMessage(sock.get(), &hello, sizeof hello).isOk()) return 2;
      said.putByte();
      for (;;) ::pause();  // never reads the Welcome (and its memfd)
    });
    ASSERT_TRUE(said.getByte()) << "round " << round;
    raw.kill();
    raw.wait();
    expectServes(round);
  }
  expectNothingLeaked("KillClientDuringImportAfterHello");
}

TEST_F(KillClient, KillClientDuringImportRandomDelay) {
  std::mt19937 rng(42);
  int finished = 0;
  for (int round = 0; round < rounds(); ++round) {
    Pipe imported;
    auto c = client(round, imported, [](TestService::Client&, Pipe& p) { p.putByte(); });
    ::usleep(rng() % 3000);
    c->kill();
    c->wait();
    if (imported.getByte(0)) ++finished;
    expectServes(round);
  }
  std::printf("[campaign] KillClientDuringImportRandomDelay: %d of %d rounds killed after import returned\n",
              finished, rounds());
  expectNothingLeaked("KillClientDuringImportRandomDelay");
}

TEST_F(KillClient, KillClientBeforeCallPublished) {
  for (int round = 0; round < rounds(); ++round) {
    Pipe imported;
    auto c = client(round, imported, [](TestService::Client& cl, Pipe& p) {
      if (cl.null().isOk()) p.putByte();  // bound, A-stack started, nothing in flight
    });
    ASSERT_TRUE(imported.getByte()) << "round " << round;
    c->kill();
    c->wait();
    expectServes(round);
  }
  expectNothingLeaked("KillClientBeforeCallPublished");
}

TEST_F(KillClient, KillClientAfterCallPublished) {
  int beforeReturn = 0;
  for (int round = 0; round < rounds(); ++round) {
    Pipe imported, go;
    auto c = client(round, imported, [&go](TestService::Client& cl, Pipe& p) {
      p.putByte();
      if (!go.getByte()) return;
      for (;;) (void)cl.sleepMs(3);
    });
    ASSERT_TRUE(imported.getByte()) << "round " << round;
    RegionWatch w;
    ASSERT_TRUE(w.open(c->pid())) << "round " << round;
    AStackControl* ctl = w.control(w.first(TestService::kSleepMs));
    ReturnControl* ret = w.returnControl(w.first(TestService::kSleepMs));
    go.putByte();
    ASSERT_TRUE(spinUntil([&] { return seqOf(ctl->callWord) >= 1; })) << "round " << round;
    c->kill();
    if (seqOf(ret->returnWord) < 1) ++beforeReturn;
    c->wait();
    expectServes(round);
  }
  std::printf("[campaign] KillClientAfterCallPublished: %d of %d kills landed before the server returned\n",
              beforeReturn, rounds());
  expectNothingLeaked("KillClientAfterCallPublished");
}

TEST_F(KillClient, KillClientInsideHandler) {
  for (int round = 0; round < rounds(); ++round) {
    ASSERT_NO_FATAL_FAILURE(killWhileHeld(round, [](TestService::Client& cl) { (void)cl.sleepMs(kHoldMs); }));
    expectServes(round);
  }
  expectNothingLeaked("KillClientInsideHandler");
}

TEST_F(KillClient, KillClientAfterReturnPublished) {
  for (int round = 0; round < rounds(); ++round) {
    Pipe imported, go;
    auto c = client(round, imported, [&go](TestService::Client& cl, Pipe& p) {
      p.putByte();
      if (go.getByte()) (void)cl.sleepMs(kHoldMs);
    });
    ASSERT_TRUE(imported.getByte()) << "round " << round;
    RegionWatch w;
    ASSERT_TRUE(w.open(c->pid())) << "round " << round;
    ReturnControl* ret = w.returnControl(w.first(TestService::kSleepMs));
    go.putByte();
    ASSERT_TRUE(server_->waitEntered()) << "round " << round;
    server_->release();
    ASSERT_TRUE(spinUntil([&] { return seqOf(ret->returnWord) == 1; })) << "round " << round;
    c->kill();
    c->wait();
    expectServes(round);
  }
  expectNothingLeaked("KillClientAfterReturnPublished");
}

TEST_F(KillClient, KillClientDuringOutOfBandTransfer) {
  for (int round = 0; round < rounds(); ++round) {
    // An argument segment, then held; once let go, the server sends its result segment to a
    // dead socket.
    ASSERT_NO_FATAL_FAILURE(killWhileHeld(round, [](TestService::Client& cl) {
      (void)cl.echo(std::vector<uint8_t>(kHoldEchoBytes, 5));
    }));
    expectServes(round);
  }
  expectNothingLeaked("KillClientDuringOutOfBandTransfer");
}

TEST_F(KillClient, KillClientDuringOutOfBandRandomDelay) {
  std::mt19937 rng(7);
  for (int round = 0; round < rounds(); ++round) {
    Pipe imported;
    auto c = client(round, imported, [](TestService::Client& cl, Pipe& p) {
      std::vector<uint8_t> big(200'000, 3);
      p.putByte();
      for (;;) (void)cl.echo(big);
    });
    ASSERT_TRUE(imported.getByte()) << "round " << round;
    ::usleep(rng() % 5000);
    c->kill();
    c->wait();
    expectServes(round);
  }
  expectNothingLeaked("KillClientDuringOutOfBandRandomDelay");
}

// ---------------------------------------------------------------------------------------
// Server killed: the client (this process) survives.

class KillServer : public ::testing::Test {
 protected:
  ImportOptions opts(int round) const {
    ImportOptions o;
    o.dir = dir_.path();
    o.mode = kTransferModes[((round % kTransferModeCount) + kTransferModeCount) % kTransferModeCount];
    return o;
  }

  // Runs `round` over rounds()+1 fresh servers; the first is a warm-up, not measured. Each round
  // also proves that the client serves itself from the next server: a fresh import and call work.
  template <class Round>
  void matrix(const char* point, Round round) {
    Resources before;
    for (int r = -1; r < rounds(); ++r) {
      if (r == 0) before = measure();
      HeldServer server(dir_.path());
      ASSERT_TRUE(server.ok()) << "round " << r;
      Result<TestService::Client> c = lrpc::import<TestService>("svc", opts(r + 3));
      ASSERT_TRUE(c.isOk()) << "round " << r << ": " << c.status().toString();
      Result<int32_t> sum = c->add(r, 2);
      ASSERT_TRUE(sum.isOk() && *sum == r + 2) << "round " << r;
      ASSERT_NO_FATAL_FAILURE(round(server, r));
    }
    Resources after = measureSettled(before);
    std::printf("[campaign] %s: client before {%s}, after %d rounds {%s}\n", point, describe(before).c_str(), rounds(),
                describe(after).c_str());
    EXPECT_EQ(after.fds, before.fds);
    EXPECT_EQ(after.memfds, before.memfds);
    EXPECT_EQ(after.threads, before.threads);
    if (kRssIsMeaningful) {
      EXPECT_LT(after.rssKb, before.rssKb + 16 * 1024);
    }
  }

  // Runs `call` on a thread of its own; `watch` runs meanwhile on this one (and kills).
  template <class Call, class Watch>
  static Status during(Call call, Watch watch) {
    Status result;
    std::thread t([&] { result = call(); });
    watch();
    t.join();
    return result;
  }

  TempDir dir_;
};

TEST_F(KillServer, KillServerDuringImport) {
  matrix("KillServerDuringImport", [&](HeldServer& server, int round) {
    server.signal(SIGSTOP);
    std::atomic<pid_t> tid{0};
    auto start = Clock::now();
    Status s = during(
        [&] {
          tid.store(currentTid());
          return lrpc::import<TestService>("svc", opts(round)).status();
        },
        [&] {
          // The import has connected and sent its Hello and waits in poll() for the Welcome.
          ASSERT_TRUE(spinUntil([&] {
            long nr = tid.load() == 0 ? -1 : blockedSyscall(tid.load());
            return nr == SYS_poll || nr == SYS_ppoll;
          })) << "round " << round;
          server.kill();
        });
    EXPECT_TRUE(s == Errc::kBindingRejected || s == Errc::kPeerDied) << "round " << round << ": " << s.toString();
    EXPECT_LT(msSince(start), 3000);
  });
}

TEST_F(KillServer, KillServerBeforeCallPublished) {
  matrix("KillServerBeforeCallPublished", [&](HeldServer& server, int round) {
    Result<TestService::Client> c = lrpc::import<TestService>("svc", opts(round));
    ASSERT_TRUE(c.isOk());
    ASSERT_TRUE(c->null().isOk());
    server.kill();
    auto start = Clock::now();
    EXPECT_EQ(c->null().code(), Errc::kPeerDied) << "round " << round;
    EXPECT_EQ(c->add(1, 2).status().code(), Errc::kPeerDied) << "round " << round;
    EXPECT_LT(msSince(start), 3000);
  });
}

TEST_F(KillServer, KillServerAfterCallPublished) {
  matrix("KillServerAfterCallPublished", [&](HeldServer& server, int round) {
    Result<TestService::Client> c = lrpc::import<TestService>("svc", opts(round));
    ASSERT_TRUE(c.isOk());
    ASSERT_TRUE(c->sleepMs(0).isOk());  // the A-stack's server thread exists
    AStackControl* ctl = c->binding()->local->control(
        c->binding()->local->procedure(TestService::kSleepMs).layout.firstAStack);
    server.signal(SIGSTOP);  // it never sees the call
    auto start = Clock::now();
    Status s = during([&] { return c->sleepMs(0).status(); },
                      [&] {
                        ASSERT_TRUE(spinUntil([&] { return seqOf(ctl->callWord) == 2; })) << "round " << round;
                        server.kill();
                      });
    EXPECT_EQ(s.code(), Errc::kPeerDied) << "round " << round << ": " << s.toString();
    EXPECT_LT(msSince(start), 3000);
  });
}

TEST_F(KillServer, KillServerInsideHandler) {
  matrix("KillServerInsideHandler", [&](HeldServer& server, int round) {
    Result<TestService::Client> c = lrpc::import<TestService>("svc", opts(round));
    ASSERT_TRUE(c.isOk());
    Status s = during([&] { return c->sleepMs(kHoldMs).status(); },
                      [&] {
                        ASSERT_TRUE(server.waitEntered()) << "round " << round;
                        server.kill();
                      });
    EXPECT_EQ(s.code(), Errc::kPeerDied) << "round " << round << ": " << s.toString();
    EXPECT_EQ(c->null().code(), Errc::kPeerDied);
  });
}

TEST_F(KillServer, KillServerAfterReturnPublished) {
  int ok = 0, died = 0;
  matrix("KillServerAfterReturnPublished", [&](HeldServer& server, int round) {
    Result<TestService::Client> c = lrpc::import<TestService>("svc", opts(round));
    ASSERT_TRUE(c.isOk());
    ReturnControl* ret = c->binding()->local->returnControl(
        c->binding()->local->procedure(TestService::kSleepMs).layout.firstAStack);
    Result<uint32_t> r = Status(Errc::kCancelled);
    std::thread t([&] { r = c->sleepMs(kHoldMs); });
    EXPECT_TRUE(server.waitEntered()) << "round " << round;
    server.release();
    EXPECT_TRUE(spinUntil([&] { return seqOf(ret->returnWord) == 1; })) << "round " << round;
    server.kill();
    t.join();
    // The return was published before the kill: the value is there, or (if the waiting thread
    // polled the socket in between) the call reports the death; never a wrong value.
    if (r.isOk()) {
      EXPECT_EQ(*r, kHoldMs);
      ok += round >= 0;
    } else {
      EXPECT_EQ(r.status().code(), Errc::kPeerDied) << r.status().toString();
      died += round >= 0;
    }
  });
  std::printf("[campaign] KillServerAfterReturnPublished: %d calls returned their value, %d reported kPeerDied\n", ok,
              died);
}

TEST_F(KillServer, KillServerDuringOutOfBandTransfer) {
  matrix("KillServerDuringOutOfBandTransfer", [&](HeldServer& server, int round) {
    Result<TestService::Client> c = lrpc::import<TestService>("svc", opts(round));
    ASSERT_TRUE(c.isOk());
    Status s = during([&] { return c->echo(std::vector<uint8_t>(kHoldEchoBytes, 1)).status(); },
                      [&] {
                        ASSERT_TRUE(server.waitEntered()) << "round " << round;
                        server.kill();
                      });
    EXPECT_EQ(s.code(), Errc::kPeerDied) << "round " << round << ": " << s.toString();
  });
}

// ---------------------------------------------------------------------------------------
// The network path: a kill while the client retransmits.

net::ClientOptions udpOptions() {
  net::ClientOptions co;
  co.mode = net::ReceiveMode::kBlocking;
  co.initialRto = std::chrono::milliseconds(5);
  co.maxRto = std::chrono::milliseconds(40);
  co.maxRetries = 10;
  return co;
}

uint64_t retransmits(const Binding& b) {
  auto* ch = dynamic_cast<net::UdpChannel*>(b.channel);
  return ch == nullptr ? 0 : ch->stats().retransmits;
}

TEST(KillNet, KillServerDuringRetransmission) {
  Resources before;
  for (int round = -1; round < rounds(); ++round) {
    if (round == 0) before = measure();
    UdpPeerServer server;
    ASSERT_NE(server.port(), 0);
    auto b = net::connect(server.uri(), net::testing::Svc::kDescriptor, udpOptions());
    ASSERT_TRUE(b.isOk()) << b.status().toString();
    ASSERT_TRUE(net::testing::callNull(**b).isOk());
    server.signal(SIGSTOP);
    auto start = Clock::now();
    Result<uint64_t> r = Status(Errc::kCancelled);
    std::thread t([&] { r = net::testing::callToken(**b, 7); });
    EXPECT_TRUE(spinUntil([&] { return retransmits(**b) > 0; })) << "round " << round;
    server.kill();
    t.join();
    EXPECT_EQ(r.status().code(), Errc::kPeerDied) << "round " << round << ": " << r.status().toString();
    EXPECT_LT(msSince(start), 5000);
    EXPECT_EQ(net::testing::callNull(**b).code(), Errc::kPeerDied);
  }
  Resources after = measureSettled(before);
  std::printf("[campaign] KillServerDuringRetransmission: client before {%s}, after %d rounds {%s}\n",
              describe(before).c_str(), rounds(), describe(after).c_str());
  EXPECT_EQ(after.fds, before.fds);
  EXPECT_EQ(after.threads, before.threads);
  if (kRssIsMeaningful) {
    EXPECT_LT(after.rssKb, before.rssKb + 16 * 1024);
  }
}

TEST(KillNet, KillClientDuringRetransmission) {
  UdpPeerServer server;
  ASSERT_NE(server.port(), 0);
  std::string uri = server.uri();
  auto check = net::connect(uri, net::testing::Svc::kDescriptor, udpOptions());
  ASSERT_TRUE(check.isOk());
  ServerReport before{};
  int executedOnce = 0;
  for (int round = -1; round < rounds(); ++round) {
    if (round == 0) {
      ASSERT_TRUE(server.report(0, &before));
    }
    uint64_t token = 1000 + static_cast<uint64_t>(round + 1);
    Pipe connected, go, retrying;
    Child c([&] {
      auto b = net::connect(uri, net::testing::Svc::kDescriptor, udpOptions());
      if (!b.isOk()) return 1;
      connected.putByte();
      if (!go.getByte()) return 2;  // the server is stopped now
      std::thread watcher([&] {
        if (spinUntil([&] { return retransmits(**b) > 0; })) retrying.putByte();
      });
      watcher.detach();
      (void)net::testing::callToken(**b, token);
      for (;;) ::pause();
    });
    ASSERT_TRUE(connected.getByte()) << "round " << round;
    server.signal(SIGSTOP);
    go.putByte();
    ASSERT_TRUE(retrying.getByte()) << "round " << round;
    c.kill();
    c.wait();
    server.signal(SIGCONT);
    // The server executes the dead client's queued request at most once, and serves on.
    auto r = net::testing::callToken(**check, 1);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    ServerReport rep;
    ASSERT_TRUE(server.report(token, &rep));
    EXPECT_LE(rep.tokenRuns, 1u) << "round " << round;
    if (round >= 0 && rep.tokenRuns == 1) ++executedOnce;
  }
  ServerReport after;
  ASSERT_TRUE(server.report(0, &after));
  std::printf("[campaign] KillClientDuringRetransmission: %d of %d dead clients' calls ran once (never twice); "
              "server before {%s, %llu sessions}, after {%s, %llu sessions}\n",
              executedOnce, rounds(), describe(before.res).c_str(), static_cast<unsigned long long>(before.sessions),
              describe(after.res).c_str(), static_cast<unsigned long long>(after.sessions));
  EXPECT_EQ(after.res.fds, before.res.fds);
  EXPECT_EQ(after.res.threads, before.res.threads);
  // Sessions of killed clients stay until evicted (no bye): a few KiB each.
  if (kRssIsMeaningful) {
    EXPECT_LT(after.res.rssKb, before.res.rssKb + 16 * 1024);
  }
}

}  // namespace
}  // namespace lrpc::campaign
