// Network faults between two namespaces (veth, tests/transport/net_harness.h): the server in
// namespace A, the client in B. nftables drops (1% to 30%) and duplicates datagrams; the
// FaultProxy in B (fault_proxy.h) reorders, replays old datagrams, spoofs cookies and source
// ports, truncates, pads to 64 KiB and floods the server with garbage while the real calls
// run. Every call must return its own right answer exactly once, or fail with a clear error
// (kPeerDied, kDeadlineExceeded); the server counts executions per token, and none may run
// twice. Extends tests/transport/net_calls_test.cc (loss 1/5/20%, dup 20%) with what it lacks.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tests/campaign/fault_proxy.h"
#include "tests/transport/net_harness.h"
#include "tests/transport/udp_server_child.h"
#include "tests/transport/test_service.h"
#include "transport/client.h"
#include "transport/server.h"

namespace lrpc::campaign {
namespace {

using net::testing::Svc;

struct Case {
  const char* name;
  int loss = 0;  // nft, percent each way
  int dup = 0;   // nft, percent each way
  ProxyFaults proxy;
};

uint16_t serveSvc(const std::string& bind) {
  return net::testing::startUdpServer(bind, net::testing::clearTextServer(), [](net::UdpServer& server) {
    return server.add("svc", Svc::kDescriptor, new Svc::Impl).isOk();
  });
}

net::ClientOptions patient() {
  net::ClientOptions co;
  co.initialRto = std::chrono::milliseconds(10);
  co.maxRto = std::chrono::milliseconds(100);
  co.maxRetries = 25;
  return co;
}

class NetFault : public ::testing::TestWithParam<Case> {};

TEST_P(NetFault, EveryCallExactlyOnceOrAClearError) {
  const Case& c = GetParam();
  testing::NetnsPair pair;
  if (Status s = pair.create(); !s.isOk()) {
    if (s.code() == Errc::kPermissionDenied) GTEST_SKIP() << "network namespaces refused: " << s.detail();
    FAIL() << s.toString();
  }
  if (c.loss > 0) {
    ASSERT_TRUE(pair.addLoss(c.loss)) << "nft loss rule refused";
  }
  if (c.dup > 0) {
    ASSERT_TRUE(pair.addDuplication(c.dup)) << "nft dup rule refused";
  }
  net::testing::ForkedServer server(pair.nsPath(true), pair.ipA() + ":0", serveSvc);
  ASSERT_NE(server.port(), 0);
  std::string direct = "udp+clear://" + pair.ipA() + ":" + std::to_string(server.port()) + "/svc";

  constexpr uint64_t kCalls = 150;
  int ok = 0, failed = 0;
  uint64_t injected = 0, reordered = 0;
  testing::runIn(pair.nsPath(false), [&] {
    FaultProxy proxy(pair.ipA(), server.port(), c.proxy);
    std::string via = "udp+clear://127.0.0.1:" + std::to_string(proxy.port()) + "/svc";
    auto b = net::connect(via, Svc::kDescriptor, patient());
    ASSERT_TRUE(b.isOk()) << b.status().toString();
    for (uint64_t t = 1; t <= kCalls; ++t) {
      auto r = net::testing::callToken(**b, t);
      if (r.isOk()) {
        EXPECT_EQ(*r, t * 3) << "token " << t;  // its own answer, never another call's
        ++ok;
      } else {
        EXPECT_TRUE(r.status() == Errc::kPeerDied || r.status() == Errc::kDeadlineExceeded) << r.status().toString();
        ++failed;
        if (r.status() == Errc::kPeerDied) break;  // the session is gone: later calls fail at once
      }
    }
    // Fragmented both ways (8 and 60 KB): fragments lost, duplicated, reordered, replayed.
    for (size_t n : {size_t{8000}, size_t{60000}}) {
      auto data = net::testing::pattern(n, static_cast<uint32_t>(n));
      auto r = net::testing::callEcho(**b, data, 0x21);
      EXPECT_TRUE(r.isOk() || r.status() == Errc::kPeerDied || r.status() == Errc::kDeadlineExceeded)
          << n << ": " << r.status().toString();
    }
    injected = proxy.injected();
    reordered = proxy.reordered();
    // Counted by the server, read over a direct session (no proxy): nothing ran twice, and
    // every call that returned ok ran exactly once.
    auto check = net::connect(direct, Svc::kDescriptor, patient());
    ASSERT_TRUE(check.isOk()) << check.status().toString();
    int ran = 0;
    for (uint64_t t = 1; t <= kCalls; ++t) {
      auto q = net::testing::queryToken(**check, t);
      ASSERT_TRUE(q.isOk()) << q.status().toString();
      EXPECT_LE(*q, 1u) << "token " << t << " executed twice";
      ran += static_cast<int>(*q);
    }
    EXPECT_GE(ran, ok);
  });
  std::printf("[campaign] %s: %d calls ok, %d failed with a clear error, %llu datagrams injected, %llu reordered\n",
              c.name, ok, failed, static_cast<unsigned long long>(injected), static_cast<unsigned long long>(reordered));
  // With these retry limits a call fails only in a long run of bad luck.
  EXPECT_GE(ok, static_cast<int>(kCalls) * 9 / 10);
}

ProxyFaults proxy(double reorder, double replay, double spoof, double truncate, double oversize, int flood,
                  uint64_t seed) {
  return ProxyFaults{reorder, replay, spoof, truncate, oversize, flood, seed};
}

INSTANTIATE_TEST_SUITE_P(
    Campaign, NetFault,
    ::testing::Values(Case{"Loss1", 1, 0, {}}, Case{"Loss10", 10, 0, {}}, Case{"Loss30", 30, 0, {}},
                      Case{"Dup30", 0, 30, {}}, Case{"Reorder30", 0, 0, proxy(0.3, 0, 0, 0, 0, 0, 3)},
                      Case{"ReplayOldPackets", 0, 0, proxy(0, 0.3, 0, 0, 0, 0, 4)},
                      Case{"SpoofCookieAndSource", 0, 0, proxy(0, 0, 0.5, 0, 0, 0, 5)},
                      Case{"TruncatedAndOversizedDatagrams", 0, 0, proxy(0, 0, 0, 0.1, 0.3, 0, 6)},
                      Case{"GarbageFloodDuringCalls", 0, 0, proxy(0, 0, 0, 0, 0, 50, 7)},
                      Case{"Loss10DupReorderReplaySpoofFlood", 10, 10, proxy(0.1, 0.1, 0.1, 0.05, 0.05, 20, 8)}),
    [](const ::testing::TestParamInfo<Case>& p) { return std::string(p.param.name); });

}  // namespace
}  // namespace lrpc::campaign
