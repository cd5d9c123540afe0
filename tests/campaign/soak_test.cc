// Soak: several client processes, several threads each, mixed calls on both paths against one
// server process for a bounded time ($LRPC_SOAK_SECONDS, 6 s in CI): the paper's four calls
// over the A-stacks (adaptive and block mode) and over UDP, and echoes of 16 B to 200 KB
// (inline and out-of-band tails). Zero wrong results, zero failed calls, and the server's own
// counts match the clients' exactly (none lost, none executed twice); the server's RSS after
// the soak stays within 8 MiB of its RSS after a warm-up run, with the same fds and threads.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "examples/paper/paper_impl.h"
#include "runtime/import.h"
#include "tests/campaign/campaign.h"
#include "tests/integration/harness.h"
#include "tests/integration/test_service.h"
#include "transport/connect.h"

namespace lrpc::campaign {
namespace {

using lrpc::testing::Child;
using lrpc::testing::Pipe;
using lrpc::testing::TempDir;
using lrpc::testing::TestService;

struct ServerCounts {
  Resources res;
  uint64_t localCalls = 0;  // calls dispatched over A-stacks (Exporter stats)
  uint64_t udpCalls = 0;    // calls executed over UDP
  uint64_t bindings = 0;    // same-host bindings and UDP sessions alive
  uint16_t port = 0;
};

struct ClientCounts {
  uint64_t local = 0, udp = 0, wrong = 0, failed = 0;
};

class SoakServer {
 public:
  explicit SoakServer(const std::string& dir) {
    child_ = std::make_unique<Child>(
        [&] {
          net::NetExporter::Options o;
          o.local.dir = dir;
          o.remote.security.clearText = true;
          net::NetExporter exporter(o);
          paper::PaperImpl paperImpl;
          TestService::Server svc;
          ServerCounts c;
          if (exporter.add<paper::Paper>("paper", paperImpl).isOk() &&
              exporter.local().add("svc", TestService::kDescriptor, static_cast<TestService::Server*>(&svc)).isOk()) {
            auto port = exporter.start("127.0.0.1:0");
            if (port.isOk()) c.port = *port;
          }
          answers_.put(&c, sizeof c);
          for (;;) {
            if (!commands_.getByte(-1)) return 0;
            c.res = measure();
            c.localCalls = exporter.local().stats().callsServed;
            c.udpCalls = exporter.remote().executed();
            c.bindings = exporter.local().stats().bindingsLive + exporter.local().stats().serverThreads +
                         exporter.remote().sessionCount();
            answers_.put(&c, sizeof c);
          }
        },
        600);
    ServerCounts first;
    if (answers_.get(&first, sizeof first)) port_ = first.port;
  }
  uint16_t port() const { return port_; }
  bool counts(ServerCounts* out) {
    commands_.putByte('c');
    return answers_.get(out, sizeof *out);
  }
  // Counts once every client's binding and session has been reclaimed.
  bool settled(ServerCounts* out) {
    for (int i = 0; i < 1000; ++i) {
      if (!counts(out)) return false;
      if (out->bindings == 0) return true;
      ::usleep(10'000);
    }
    return false;
  }

 private:
  Pipe commands_, answers_;
  std::unique_ptr<Child> child_;
  uint16_t port_ = 0;
};

paper::Bytes200 pattern(uint64_t seed) {
  paper::Bytes200 b{};
  uint64_t* w = &b.w0;
  for (int i = 0; i < 25; ++i) w[i] = seed * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(i);
  return b;
}

// One client thread's work until `until`: kind 0 paper over A-stacks, 1 paper over UDP,
// 2 echoes over A-stacks. Each call's result is checked against what it must be.
void work(int kind, const ConnectOptions& co, const std::string& udp, std::chrono::steady_clock::time_point until,
          ClientCounts* out) {
  uint64_t& n = kind == 1 ? out->udp : out->local;
  if (kind == 2) {
    Result<TestService::Client> c = lrpc::import<TestService>("svc", co.local);
    if (!c.isOk()) {
      ++out->failed;
      return;
    }
    const size_t sizes[] = {16, 1000, 5000, 70'000, 200'000};
    for (uint64_t i = 0; std::chrono::steady_clock::now() < until; ++i) {
      std::vector<uint8_t> in(sizes[i % 5], static_cast<uint8_t>(i));
      in[0] = static_cast<uint8_t>(i >> 8);
      Result<std::vector<uint8_t>> r = c->echo(in);
      ++n;
      if (!r.isOk()) ++out->failed;
      else if (*r != in) ++out->wrong;
    }
    return;
  }
  auto c = connect<paper::Paper>(kind == 1 ? udp : "paper", co);
  if (!c.isOk()) {
    ++out->failed;
    return;
  }
  for (uint64_t i = 0; std::chrono::steady_clock::now() < until; ++i) {
    switch (i % 4) {
      case 0: {
        Status s = c->null();
        if (!s.isOk()) ++out->failed;
        break;
      }
      case 1: {
        auto r = c->add(static_cast<int32_t>(i), 7);
        if (!r.isOk()) ++out->failed;
        else if (*r != static_cast<int32_t>(i) + 7) ++out->wrong;
        break;
      }
      case 2: {
        Status s = c->bigIn(pattern(i));
        if (!s.isOk()) ++out->failed;
        break;
      }
      default: {
        paper::Bytes200 in = pattern(i);
        auto r = c->bigInOut(in);
        if (!r.isOk()) ++out->failed;
        else if (std::memcmp(&*r, &in, sizeof in) != 0) ++out->wrong;
        break;
      }
    }
    ++n;
  }
}

// Runs kProcesses client processes of kThreads threads for `seconds`; sums what they report.
ClientCounts runClients(const std::string& dir, uint16_t port, double seconds) {
  constexpr int kProcesses = 3, kThreads = 3;
  std::string udp = "udp+clear://127.0.0.1:" + std::to_string(port) + "/paper";
  std::vector<std::unique_ptr<Pipe>> reports;
  std::vector<std::unique_ptr<Child>> clients;
  for (int p = 0; p < kProcesses; ++p) {
    reports.push_back(std::make_unique<Pipe>());
    Pipe* report = reports.back().get();
    clients.push_back(std::make_unique<Child>([&, p, report] {
      ConnectOptions co;
      co.local.dir = dir;
      co.local.mode = p % 2 == 0 ? TransferMode::kAdaptive : TransferMode::kBlock;
      co.remote.maxRetries = 20;
      auto until = std::chrono::steady_clock::now() +
                   std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
      std::vector<ClientCounts> counts(kThreads);
      std::vector<std::thread> threads;
      for (int t = 0; t < kThreads; ++t) threads.emplace_back([&, t] { work(t, co, udp, until, &counts[t]); });
      ClientCounts sum;
      for (int t = 0; t < kThreads; ++t) {
        threads[t].join();
        sum.local += counts[t].local;
        sum.udp += counts[t].udp;
        sum.wrong += counts[t].wrong;
        sum.failed += counts[t].failed;
      }
      report->put(&sum, sizeof sum);
      return 0;
    }));
  }
  ClientCounts total;
  for (int p = 0; p < kProcesses; ++p) {
    ClientCounts c;
    if (!reports[p]->get(&c, sizeof c, static_cast<int>(seconds * 1000) + 60'000)) {
      ++total.failed;
      continue;
    }
    total.local += c.local;
    total.udp += c.udp;
    total.wrong += c.wrong;
    total.failed += c.failed;
    EXPECT_EQ(clients[p]->wait(), 0);
  }
  return total;
}

TEST(Soak, SoakBothPathsNothingLostMemoryFlat) {
  TempDir dir;
  SoakServer server(dir.path());
  ASSERT_NE(server.port(), 0);
  ClientCounts warm = runClients(dir.path(), server.port(), 1.0);
  EXPECT_EQ(warm.failed + warm.wrong, 0u);
  ServerCounts before, after;
  ASSERT_TRUE(server.settled(&before));
  // The warm-up's last clerk may still be closing its binding: take the baseline once fds and
  // threads hold still.
  for (int still = 0, i = 0; still < 20 && i < 1000; ++i) {
    ServerCounts now;
    ::usleep(10'000);
    ASSERT_TRUE(server.settled(&now));
    still = now.res.fds == before.res.fds && now.res.threads == before.res.threads ? still + 1 : 0;
    before = now;
  }
  int seconds = soakSeconds(6);
  ClientCounts soak = runClients(dir.path(), server.port(), seconds);
  // The clerk counts a binding gone before it has closed the binding's fds: wait for both.
  for (int i = 0; i < 500; ++i) {
    ASSERT_TRUE(server.settled(&after)) << "bindings or sessions left: " << after.bindings;
    if (after.res.fds == before.res.fds && after.res.threads == before.res.threads) break;
    ::usleep(10'000);
  }
  std::printf("[campaign] Soak %d s, 3 processes x 3 threads: %llu same-host calls, %llu UDP calls, %llu wrong, "
              "%llu failed; server counted %llu same-host, %llu UDP; server before {%s}, after {%s}\n",
              seconds, static_cast<unsigned long long>(soak.local), static_cast<unsigned long long>(soak.udp),
              static_cast<unsigned long long>(soak.wrong), static_cast<unsigned long long>(soak.failed),
              static_cast<unsigned long long>(after.localCalls - before.localCalls),
              static_cast<unsigned long long>(after.udpCalls - before.udpCalls), describe(before.res).c_str(),
              describe(after.res).c_str());
  EXPECT_EQ(soak.wrong, 0u);
  EXPECT_EQ(soak.failed, 0u);
  EXPECT_GT(soak.local, 0u);
  EXPECT_GT(soak.udp, 0u);
  // Every call the clients made was executed by the server exactly once.
  EXPECT_EQ(after.localCalls - before.localCalls, soak.local);
  EXPECT_EQ(after.udpCalls - before.udpCalls, soak.udp);
  EXPECT_EQ(after.res.fds, before.res.fds);
  EXPECT_EQ(after.res.memfds, before.res.memfds);
  EXPECT_EQ(after.res.threads, before.res.threads);
  if (kRssIsMeaningful) {
    EXPECT_LT(after.res.rssKb, before.res.rssKb + 8 * 1024);
  }
}

}  // namespace
}  // namespace lrpc::campaign
