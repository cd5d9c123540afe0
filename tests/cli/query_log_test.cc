// The pieces under `lrpc`, in one process: the query API (runtime/introspect.h) against a
// real Exporter, and the log switch (runtime/base/log.h): silent by default, topics, the sink.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "examples/paper/paper_impl.h"
#include "runtime/exporter.h"
#include "runtime/import.h"
#include "runtime/introspect.h"
#include "runtime/base/log.h"
#include "tests/integration/harness.h"

namespace lrpc {
namespace {

using paper::Paper;
using paper::PaperImpl;

// Captures log lines for one test and restores silence afterwards.
class CapturedLog {
 public:
  explicit CapturedLog(uint32_t mask) {
    setLogSink([this](LogTopic topic, std::string_view line) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.push_back(std::string(logTopicName(topic)) + ": " + std::string(line));
    });
    setLogMask(mask);
  }
  ~CapturedLog() {
    setLogMask(0);
    setLogSink({});
  }
  std::vector<std::string> lines() {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }
  bool has(std::string_view needle) {
    for (const std::string& l : lines()) {
      if (l.find(needle) != std::string::npos) return true;
    }
    return false;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
};

TEST(LogMask, ParsesTopicsAndAll) {
  EXPECT_EQ(parseLogMask(""), 0u);
  EXPECT_EQ(parseLogMask("0"), 0u);
  EXPECT_EQ(parseLogMask("none"), 0u);
  EXPECT_EQ(parseLogMask("1"), kLogAll);
  EXPECT_EQ(parseLogMask("all"), kLogAll);
  EXPECT_EQ(parseLogMask("binding"), static_cast<uint32_t>(LogTopic::kBinding));
  EXPECT_EQ(parseLogMask("errors,transport"),
            static_cast<uint32_t>(LogTopic::kErrors) | static_cast<uint32_t>(LogTopic::kTransport));
  EXPECT_EQ(parseLogMask("binding,bogus"), static_cast<uint32_t>(LogTopic::kBinding));
}

class QueryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ExporterOptions so;
    so.dir = dir_.path();
    exporter_.emplace(so);
    ASSERT_TRUE(exporter_->add<Paper>("paper", impl_).isOk());
    options_.dir = dir_.path();
  }

  testing::TempDir dir_;
  PaperImpl impl_;
  std::optional<Exporter> exporter_;
  QueryOptions options_;
};

TEST_F(QueryTest, ListsAndDescribesAName) {
  Result<std::vector<std::string>> names = listNames(options_);
  ASSERT_TRUE(names.isOk()) << names.status().toString();
  EXPECT_EQ(*names, std::vector<std::string>{"paper"});

  ImportOptions io;
  io.dir = dir_.path();
  Result<Paper::Client> client = import<Paper>("paper", io);
  ASSERT_TRUE(client.isOk()) << client.status().toString();
  for (int i = 0; i < 7; ++i) ASSERT_TRUE(client->add(i, i).isOk());

  Result<ServerInfo> info = queryServer("paper", options_);
  ASSERT_TRUE(info.isOk()) << info.status().toString();
  EXPECT_EQ(info->interfaceName, Paper::kDescriptor.name);
  EXPECT_EQ(info->interfaceId, Paper::kDescriptor.id);
  EXPECT_EQ(info->signatureHash, Paper::kDescriptor.signatureHash);
  EXPECT_EQ(info->procedureCount, Paper::kDescriptor.procedureCount);
  EXPECT_EQ(info->pid, ::getpid());
  EXPECT_EQ(info->nameBindings, 1u);
  EXPECT_EQ(info->stats.bindingsLive, 1u);
  EXPECT_EQ(info->stats.bindingsTotal, 1u);
  EXPECT_EQ(info->stats.callsServed, 7u);
  EXPECT_EQ(info->stats.serverThreads, 1u);
  // The query itself is no binding.
  EXPECT_EQ(exporter_->stats().bindingsTotal, 1u);
  EXPECT_EQ(exporter_->stats().bindingsRejected, 0u);

  // A second name of the same Exporter: its own bindings, the process's counters.
  PaperImpl second;
  ASSERT_TRUE(exporter_->add<Paper>("paper2", second).isOk());
  Result<ServerInfo> info2 = queryServer("paper2", options_);
  ASSERT_TRUE(info2.isOk()) << info2.status().toString();
  EXPECT_EQ(info2->nameBindings, 0u);
  EXPECT_EQ(info2->stats.bindingsLive, 1u);
  EXPECT_EQ(info2->stats.callsServed, 7u);
  names = listNames(options_);
  ASSERT_TRUE(names.isOk());
  EXPECT_EQ(*names, (std::vector<std::string>{"paper", "paper2"}));
}

TEST_F(QueryTest, PingsInEveryModeWithoutCountingCalls) {
  for (TransferMode mode : {TransferMode::kAdaptive, TransferMode::kSpin, TransferMode::kBlock}) {
    Result<std::unique_ptr<Pinger>> pinger = Pinger::open("paper", mode, options_);
    ASSERT_TRUE(pinger.isOk()) << pinger.status().toString();
    EXPECT_EQ((*pinger)->info().interfaceName, Paper::kDescriptor.name);
    for (int i = 0; i < 50; ++i) {
      Result<std::chrono::nanoseconds> rtt = (*pinger)->ping(std::chrono::seconds(5));
      ASSERT_TRUE(rtt.isOk()) << rtt.status().toString();
      EXPECT_GT(rtt->count(), 0);
    }
  }
  EXPECT_EQ(exporter_->stats().callsServed, 0u);
  EXPECT_EQ(exporter_->stats().bindingsTotal, 0u);
}

TEST_F(QueryTest, PingSeesTheServerGo) {
  Result<std::unique_ptr<Pinger>> pinger = Pinger::open("paper", TransferMode::kAdaptive, options_);
  ASSERT_TRUE(pinger.isOk()) << pinger.status().toString();
  ASSERT_TRUE((*pinger)->ping(std::chrono::seconds(5)).isOk());
  exporter_.reset();  // ends the query connection and joins the ping thread
  Result<std::chrono::nanoseconds> rtt = (*pinger)->ping(std::chrono::seconds(5));
  ASSERT_FALSE(rtt.isOk());
  EXPECT_EQ(rtt.status().code(), Errc::kPeerDied) << rtt.status().toString();
}

TEST_F(QueryTest, WrongNamesAreNotFound) {
  Result<ServerInfo> info = queryServer("nosuch", options_);
  ASSERT_FALSE(info.isOk());
  EXPECT_EQ(info.status().code(), Errc::kNotFound);
  EXPECT_NE(info.status().detail().find("no server exports \"nosuch\""), std::string::npos);
  Result<std::unique_ptr<Pinger>> pinger = Pinger::open("../etc", TransferMode::kAdaptive, options_);
  ASSERT_FALSE(pinger.isOk());
  EXPECT_EQ(pinger.status().code(), Errc::kInvalidArgument);
}

TEST_F(QueryTest, SilentByDefaultAndLogsBindingAndErrorsWhenAsked) {
  {
    CapturedLog log(0);
    ImportOptions io;
    io.dir = dir_.path();
    ASSERT_TRUE(import<Paper>("paper", io).isOk());
    EXPECT_TRUE(log.lines().empty());
  }
  {
    CapturedLog log(static_cast<uint32_t>(LogTopic::kBinding) | static_cast<uint32_t>(LogTopic::kErrors));
    ImportOptions io;
    io.dir = dir_.path();
    ASSERT_TRUE(import<Paper>("paper", io).isOk());
    // A second exporter of the same name fails; an import with another interface is refused.
    ExporterOptions so;
    so.dir = dir_.path();
    Exporter second(so);
    PaperImpl impl;
    EXPECT_EQ(second.add<Paper>("paper", impl).code(), Errc::kAlreadyExists);
    InterfaceDescriptor other = Paper::kDescriptor;
    other.signatureHash ^= 1;
    EXPECT_EQ(importBinding("paper", other, io).status().code(), Errc::kBindingRejected);
    // The clerks log from their own threads, in no set order: wait for both lines.
    for (int i = 0; i < 500 && !(log.has("refused a binding") && log.has("bound a client")); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(log.has("binding: imported \"paper\"")) << ::testing::PrintToString(log.lines());
    EXPECT_TRUE(log.has("binding: \"paper\": bound a client")) << ::testing::PrintToString(log.lines());
    EXPECT_TRUE(log.has("binding: \"paper\": refused a binding: binding rejected: interface mismatch"))
        << ::testing::PrintToString(log.lines());
    EXPECT_TRUE(log.has("errors: import \"paper\" refused: interface mismatch")) << ::testing::PrintToString(log.lines());
  }
}

}  // namespace
}  // namespace lrpc
