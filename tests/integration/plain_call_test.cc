// PlainCall (runtime/plain_call.h): where it starts (the calling thread's cached A-stack of a
// started procedure, on a live plain binding) and where it leaves the call to a LocalCall, and
// its deadline, whose late return must not reach the next call. The rest of the same-host suite
// calls through it too: TestService::Client and generated code try it first.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "runtime/import.h"
#include "runtime/local_binding.h"
#include "runtime/plain_call.h"
#include "tests/integration/exporter_process.h"
#include "tests/integration/servers.h"

namespace lrpc::testing {
namespace {

// add(a, b) through a PlainCall, which must be ready.
Result<int32_t> plainAdd(const Binding& b, int32_t x, int32_t y) {
  PlainCall call(b, TestService::kAdd, {});
  if (!call.ready()) return Status(Errc::kUnsupported, "no PlainCall here");
  TestService::AddArgs args{x, y};
  std::memcpy(call.args(), &args, sizeof args);
  if (Status s = call.invoke(); !s.isOk()) return s;
  TestService::AddResults r;
  std::memcpy(&r, call.results(), sizeof r);
  return r.sum;
}

// add(a, b) with a < 0 sleeps b ms first: a slow call on a procedure of several A-stacks
// (one A-stack alone is never cached: runtime/astack_cache.h).
class SlowAddServer final : public TestService::Server {
 public:
  Result<int32_t> add(int32_t a, int32_t b) override {
    if (a < 0) std::this_thread::sleep_for(std::chrono::milliseconds(b));
    return a + b;
  }
};

class PlainCallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ExporterProcess>(dir_.path(), exportOne<TestService, SlowAddServer>("svc"));
    ASSERT_TRUE(server_->up());
    ImportOptions o;
    o.dir = dir_.path();
    Result<TestService::Client> c = lrpc::import<TestService>("svc", o);
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    client_ = *c;
    LocalBinding* lb = client_.binding()->local;
    ASSERT_NE(lb, nullptr);
    // The lanes need membarrier (runtime/astack_cache.h); without them no PlainCall starts.
    ASSERT_GT(lb->procedure(TestService::kAdd).cache.lanes(), 0u) << "no A-stack cache: membarrier refused";
  }
  const Binding& binding() const { return *client_.binding(); }

  TempDir dir_;
  std::unique_ptr<ExporterProcess> server_;
  TestService::Client client_;
};

TEST_F(PlainCallTest, StartsOnlyOnTheThreadsCachedAStack) {
  // Before this thread's first call it has no A-stack cached, and the server no thread for it.
  EXPECT_FALSE(PlainCall(binding(), TestService::kAdd, {}).ready());
  ASSERT_TRUE(client_.add(1, 2).isOk());  // a LocalCall, which leaves its A-stack in our lane
  Result<int32_t> r = plainAdd(binding(), 40, 2);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(*r, 42);
  {
    PlainCall outer(binding(), TestService::kAdd, {});
    ASSERT_TRUE(outer.ready());
    // A second call of the same thread while the first holds the lane: a LocalCall's, from the pool.
    EXPECT_FALSE(PlainCall(binding(), TestService::kAdd, {}).ready());
    EXPECT_EQ(*client_.add(5, 6), 11);
  }
  EXPECT_TRUE(PlainCall(binding(), TestService::kAdd, {}).ready());  // given back to the lane
  // Another procedure has a lane of its own; another thread has none yet.
  EXPECT_FALSE(PlainCall(binding(), TestService::kNull, {}).ready());
  std::thread([&] { EXPECT_FALSE(PlainCall(binding(), TestService::kAdd, {}).ready()); }).join();
  // Out of range, as LocalCall reports it.
  EXPECT_FALSE(PlainCall(binding(), 99, {}).ready());
  EXPECT_EQ(client_.binding()->local->procedureCount(), 5u);
}

TEST_F(PlainCallTest, ManyCallsKeepTheirResultsApart) {
  ASSERT_TRUE(client_.add(0, 0).isOk());
  for (int32_t i = 0; i < 2000; ++i) {
    Result<int32_t> r = plainAdd(binding(), i, 3 * i);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    ASSERT_EQ(*r, 4 * i);
  }
}

TEST_F(PlainCallTest, ALateReturnPastTheDeadlineNeverReachesTheNextCall) {
  ASSERT_TRUE(client_.add(0, 0).isOk());  // an A-stack of add, now in our lane
  ASSERT_TRUE(PlainCall(binding(), TestService::kAdd, {}).ready());
  TestService::Client hurried = client_.withOptions(CallOptions{std::chrono::milliseconds(30)});
  Result<int32_t> late = hurried.add(-1, 300);
  EXPECT_EQ(late.status().code(), Errc::kDeadlineExceeded) << late.status().toString();
  // That A-stack left the lane for the late return; the next call takes another from the pool
  // and caches it in its place.
  EXPECT_FALSE(PlainCall(binding(), TestService::kAdd, {}).ready());
  ASSERT_EQ(*client_.add(7, 0), 7);
  EXPECT_TRUE(PlainCall(binding(), TestService::kAdd, {}).ready());
  // Past the late return (299), whose A-stack is back in the pool: no call ever reads it.
  std::this_thread::sleep_for(std::chrono::milliseconds(350));
  for (int32_t i = 0; i < 50; ++i) {
    Result<int32_t> r = plainAdd(binding(), i, 1);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    ASSERT_EQ(*r, i + 1);
    // While our lane is held, the stub's call takes an A-stack from the pool: in turn, the one
    // the late return gave back.
    const PlainCall holding(binding(), TestService::kAdd, {});
    ASSERT_TRUE(holding.ready());
    Result<int32_t> pooled = client_.add(i, 2);
    ASSERT_TRUE(pooled.isOk()) << pooled.status().toString();
    ASSERT_EQ(*pooled, i + 2);
  }
}

TEST_F(PlainCallTest, ADeadServerEndsItAsItEndsALocalCall) {
  ASSERT_TRUE(client_.add(1, 1).isOk());
  ASSERT_TRUE(PlainCall(binding(), TestService::kAdd, {}).ready());
  server_->kill();
  Result<int32_t> r = plainAdd(binding(), 1, 1);  // ready: the binding does not know yet
  EXPECT_EQ(r.status().code(), Errc::kPeerDied) << r.status().toString();
  EXPECT_FALSE(PlainCall(binding(), TestService::kAdd, {}).ready());  // dead now
  EXPECT_EQ(client_.add(1, 1).status().code(), Errc::kPeerDied);
}

}  // namespace
}  // namespace lrpc::testing
