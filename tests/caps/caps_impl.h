// The servers of caps.capnp, and the checks every path runs against them.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <utility>

#include "caps.lrpc.h"

namespace lrpc::testing {

class CounterImpl final : public caps::Counter::Server {
 public:
  CounterImpl(std::shared_ptr<std::atomic<uint32_t>> live, std::string label, int64_t start)
      : live_(std::move(live)), label_(std::move(label)), total_(start) {
    ++*live_;
  }
  ~CounterImpl() override { --*live_; }
  Result<int64_t> add(int64_t n) override { return total_ += n; }
  Result<std::string> label() override { return label_; }

 private:
  std::shared_ptr<std::atomic<uint32_t>> live_;
  std::string label_;
  std::atomic<int64_t> total_;
};

class FactoryImpl final : public caps::Factory::Server {
 public:
  Result<caps::Counter::Client> make(std::string_view label, int64_t start) override {
    return caps::Counter::Client::serve(std::make_shared<CounterImpl>(live_, std::string(label), start));
  }
  Result<int64_t> read(const caps::Counter::Client& counter) override { return counter.withOptions({}).add(0); }
  Result<caps::Counter::Client> again(const caps::Counter::Client& counter) override { return counter; }
  Result<caps::Counter::Client> nothing() override { return caps::Counter::Client(); }
  Result<caps::Factory::PairResults> pair(int64_t a, int64_t b) override {
    caps::Factory::PairResults out;
    out.first = caps::Counter::Client::serve(std::make_shared<CounterImpl>(live_, "first", a));
    out.second = caps::Counter::Client::serve(std::make_shared<CounterImpl>(live_, "second", b));
    out.sum = a + b;
    return out;
  }
  Result<uint32_t> live() override { return live_->load(); }

 private:
  std::shared_ptr<std::atomic<uint32_t>> live_ = std::make_shared<std::atomic<uint32_t>>(0);
};

// Every form of this version's capabilities, through `factory` (a fresh server: no counters).
inline void checkCapabilities(caps::Factory::Client& factory) {
  auto a = factory.make("a", 10);
  ASSERT_TRUE(a.isOk()) << a.status().toString();
  auto total = a->add(5);
  ASSERT_TRUE(total.isOk()) << total.status().toString();
  EXPECT_EQ(*total, 15);
  auto label = a->label();
  ASSERT_TRUE(label.isOk()) << label.status().toString();
  EXPECT_EQ(*label, "a");

  // Passed back: the server finds its own object and calls it.
  auto read = factory.read(*a);
  ASSERT_TRUE(read.isOk()) << read.status().toString();
  EXPECT_EQ(*read, 15);

  // Passed back and returned: another reference to the same object.
  auto same = factory.again(*a);
  ASSERT_TRUE(same.isOk()) << same.status().toString();
  ASSERT_TRUE(same->add(1).isOk());
  EXPECT_EQ(*a->add(0), 16);

  // Several results, two of them capabilities.
  auto pair = factory.pair(1, 2);
  ASSERT_TRUE(pair.isOk()) << pair.status().toString();
  EXPECT_EQ(pair->sum, 3);
  EXPECT_EQ(*pair->first.add(0), 1);
  EXPECT_EQ(*pair->second.add(0), 2);
  EXPECT_EQ(*pair->second.label(), "second");
  EXPECT_EQ(*factory.live(), 3u);

  // The null capability: a Client that is not bound.
  auto none = factory.nothing();
  ASSERT_TRUE(none.isOk()) << none.status().toString();
  EXPECT_EQ(none->add(1).status().code(), Errc::kBindingRejected);
  auto readNone = factory.read(*none);  // the server gets a null Client too
  EXPECT_EQ(readNone.status().code(), Errc::kBindingRejected);

  // Released when the last reference in this process goes (a, and same which names it too).
  *pair = {};
  EXPECT_EQ(*factory.live(), 1u);
  a = Status(Errc::kCancelled);
  EXPECT_EQ(*factory.live(), 1u);  // `same` still holds it
  same = Status(Errc::kCancelled);
  EXPECT_EQ(*factory.live(), 0u);
}

}  // namespace lrpc::testing
