// Void and default values through generated stubs: struct field defaults are member
// initializers, trailing parameter defaults are the client's default arguments, Void carries
// nothing. Round trips over the network frame path (in-process double) and across two real
// processes on the same host.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <memory>
#include <string>

#include "defaults.lrpc.h"
#include "runtime/exporter.h"
#include "runtime/import.h"
#include "tests/integration/exporter_process.h"
#include "tests/integration/harness.h"
#include "tests/testing/in_process_channel.h"

namespace lrpc::testing {
namespace {

using defaults::Config;
using defaults::Level;
using defaults::Settings;

class SettingsImpl final : public Settings::Server {
 public:
  Result<uint32_t> apply(const Config& c, bool dryRun) override {
    return c.retries + (dryRun ? 100u : 0u) + (c.level == Level::kHigh ? 10u : 0u) + (c.verbose ? 1000u : 0u);
  }
  Result<std::string> greet(std::string_view name, uint16_t times) override {
    std::string out;
    for (uint16_t i = 0; i < times; ++i) out += name;
    return out;
  }
  Status tick() override {
    ++ticks;
    return {};
  }
  Result<int32_t> mix(int32_t a, int32_t b, Level c) override { return a + b + (c == Level::kHigh ? 100 : 0); }
  Result<int32_t> withResultDefault() override { return 7; }
  int ticks = 0;
};

TEST(Defaults, StructFieldDefaultsAreMemberInitializers) {
  Config c{};
  EXPECT_EQ(c.retries, 3u);
  EXPECT_EQ(c.ratio, 0.25);
  EXPECT_EQ(c.scale, -1.5f);
  EXPECT_EQ(c.level, Level::kHigh);
  EXPECT_TRUE(c.verbose);
  EXPECT_EQ(c.floor, INT64_MIN);
  EXPECT_EQ(c.ceiling, UINT64_MAX);
  EXPECT_EQ(c.small, -7);
  EXPECT_EQ(c.plain, 0);
  EXPECT_TRUE(std::isinf(c.forever) && c.forever > 0);
}

// The calls every round trip below makes, with what each must answer.
void expectDefaultsAndVoid(Settings::Client& client, const int* ticks) {
  Config c{};
  auto applied = client.apply(c);  // dryRun defaults to false
  ASSERT_TRUE(applied.isOk()) << applied.status().toString();
  EXPECT_EQ(*applied, 3u + 10u + 1000u);
  c.retries = 5;
  c.level = Level::kLow;
  c.verbose = false;
  EXPECT_EQ(*client.apply(c, true), 105u);
  auto hello = client.greet();
  ASSERT_TRUE(hello.isOk()) << hello.status().toString();
  EXPECT_EQ(*hello, "world \"quoted\"world \"quoted\"");
  EXPECT_EQ(*client.greet("ab", 3), "ababab");
  EXPECT_EQ(*client.greet("x"), "xx");
  const int before = ticks ? *ticks : 0;
  Status t = client.tick();
  EXPECT_TRUE(t.isOk()) << t.toString();
  if (ticks) {
    EXPECT_EQ(*ticks, before + 1);
  }
  EXPECT_EQ(*client.mix(1, 2), 3);  // c defaults to low
  EXPECT_EQ(*client.mix(1, 2, Level::kHigh), 103);
  EXPECT_EQ(*client.withResultDefault(), 7);
}

TEST(Defaults, DataAndListLiteralsOnStructFields) {
  defaults::Profile p;
  EXPECT_EQ(p.key, (std::vector<uint8_t>{0x00, 0xff, 0x10}));
  EXPECT_EQ(p.primes, (std::vector<uint16_t>{2, 3, 5, 7}));
  EXPECT_EQ(p.names, (std::vector<std::string>{"a", "b \"c\""}));
  EXPECT_EQ(p.levels, (std::vector<defaults::Level>{defaults::Level::kHigh, defaults::Level::kLow}));
  EXPECT_EQ(p.grid, (std::vector<std::vector<int8_t>>{{1, -2}, {}}));
  EXPECT_EQ(p.blobs, (std::vector<std::vector<uint8_t>>{{0x01}, {0x02, 0x03}}));
  EXPECT_EQ(p.ratios, (std::vector<float>{0.5f, -1.0f}));
  EXPECT_EQ(p.flags, (std::vector<bool>{true, false}));
  EXPECT_EQ(p.big, (std::vector<int64_t>{INT64_MIN, 7}));
}

// A View starts from the same defaults: a Data or List default is a constant it views, so a
// view that nothing set converts to the owning value that nothing set.
TEST(Defaults, ViewsStartFromTheSameDefaults) {
  const defaults::Profile::View v;
  EXPECT_EQ(ownedOf(v), defaults::Profile{});
  EXPECT_EQ(v.names.size(), 2u);
  EXPECT_EQ(v.names[1], "b \"c\"");
  EXPECT_EQ(v.grid[0][1], -2);
  EXPECT_EQ(v.primes.data(), defaults::Profile::View{}.primes.data());  // one constant, not a copy each
  ViewArena arena;
  defaults::Profile changed;
  changed.primes = {11};
  changed.flags.clear();
  EXPECT_EQ(ownedOf(viewOf(changed, arena)), changed);
}

TEST(Defaults, VoidCarriesNothing) {
  // tick(Void) -> (Void): no frame at all; mix's Void parameter and result take no bytes.
  EXPECT_EQ(Settings::kProcedures[Settings::kTick].argsSize, 0u);
  EXPECT_EQ(Settings::kProcedures[Settings::kTick].resultsSize, 0u);
  EXPECT_EQ(Settings::kProcedures[Settings::kMix].argsSize, 12u);
  EXPECT_EQ(Settings::kProcedures[Settings::kMix].resultsSize, 4u);
}

TEST(Defaults, RoundTripOverTheNetworkFramePath) {
  SettingsImpl impl;
  auto bound = bindInProcess<Settings>(impl);
  Settings::Client client(bound.binding);
  expectDefaultsAndVoid(client, &impl.ticks);
}

TEST(Defaults, RoundTripAcrossProcessesOnTheSameHost) {
  TempDir dir;
  ExporterProcess server(dir.path(), exportOne<Settings, SettingsImpl>("settings"));
  ASSERT_TRUE(server.up());
  ImportOptions o;
  o.dir = dir.path();
  Result<Settings::Client> client = lrpc::import<Settings>("settings", o);
  ASSERT_TRUE(client.isOk()) << client.status().toString();
  expectDefaultsAndVoid(*client, nullptr);
}

}  // namespace
}  // namespace lrpc::testing
