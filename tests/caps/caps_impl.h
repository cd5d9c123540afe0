// The servers of caps.capnp, and the checks every path runs against them.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "caps.lrpc.h"
#include "runtime/base/mutex.h"

namespace lrpc::testing {

// Sums wrap, as the counters' atomics do: a hostile frame (tests/fuzz/caps_fuzz) may pass any number.
inline int64_t wrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

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

class SpecialImpl final : public caps::Special::Server {
 public:
  SpecialImpl(std::shared_ptr<std::atomic<uint32_t>> live, int64_t start) : live_(std::move(live)), total_(start) {
    ++*live_;
  }
  ~SpecialImpl() override { --*live_; }
  Result<int64_t> add(int64_t n) override { return total_ += n; }
  Result<std::string> label() override { return std::string("special"); }
  Result<int64_t> twice(int64_t n) override { return total_ += wrapAdd(n, n); }

 private:
  std::shared_ptr<std::atomic<uint32_t>> live_;
  std::atomic<int64_t> total_;
};

class TaggedImpl final : public caps::Tagged::Server {
 public:
  TaggedImpl(std::shared_ptr<std::atomic<uint32_t>> live, int64_t start, std::string name)
      : live_(std::move(live)), total_(start), name_(std::move(name)) {
    ++*live_;
  }
  ~TaggedImpl() override { --*live_; }
  Result<int64_t> add(int64_t n) override { return total_ += n; }
  Result<std::string> label() override { return std::string("tagged"); }
  Result<std::string> name() override { return name_; }
  Result<std::string> tag() override { return "tag:" + name_; }

 private:
  std::shared_ptr<std::atomic<uint32_t>> live_;
  std::atomic<int64_t> total_;
  std::string name_;
};

// A client process's body: makes five counters of `factory`, says so through `ready`, and holds
// them until it is killed (so that it dies with the server's objects in hand). Exits 1 or 2 if
// it could not get them.
inline int holdCountersUntilKilled(Result<caps::Factory::Client> factory, const std::function<void()>& ready) {
  if (!factory.isOk()) return 1;
  std::vector<caps::Counter::Client> kept;
  for (int i = 0; i < 5; ++i) {
    auto c = factory->make("kept", i);
    if (!c.isOk()) return 2;
    kept.push_back(std::move(*c));
  }
  ready();
  for (;;) ::pause();
}

class FactoryImpl final : public caps::Factory::Server {
 public:
  Result<caps::Counter::Client> make(std::string_view label, int64_t start) override {
    return caps::Counter::Client::serve(std::make_shared<CounterImpl>(live_, std::string(label), start));
  }
  Result<int64_t> read(const caps::Counter::Client& counter) override { return counter.add(0); }
  Result<caps::Counter::Client> again(const caps::Counter::Client& counter) override { return counter; }
  Result<caps::Counter::Client> nothing() override { return caps::Counter::Client(); }
  Result<caps::Factory::PairResults> pair(int64_t a, int64_t b) override {
    caps::Factory::PairResults out;
    out.first = caps::Counter::Client::serve(std::make_shared<CounterImpl>(live_, "first", a));
    out.second = caps::Counter::Client::serve(std::make_shared<CounterImpl>(live_, "second", b));
    out.sum = wrapAdd(a, b);
    return out;
  }
  Result<uint32_t> live() override { return live_->load(); }
  Result<caps::Special::Client> special(int64_t start) override {
    return caps::Special::Client::serve(std::make_shared<SpecialImpl>(live_, start));
  }
  Result<caps::Counter::Client> asCounter(int64_t start) override {
    // A Special is a Counter (one conversion: then Result's).
    return caps::Counter::Client(caps::Special::Client::serve(std::make_shared<SpecialImpl>(live_, start)));
  }
  Result<caps::Tagged::Client> tagged(int64_t start, std::string_view name) override {
    return caps::Tagged::Client::serve(std::make_shared<TaggedImpl>(live_, start, std::string(name)));
  }
  Result<std::string> nameOf(const caps::Named::Client& named) override { return named.name(); }

 private:
  std::shared_ptr<std::atomic<uint32_t>> live_ = std::make_shared<std::atomic<uint32_t>>(0);
};

class KeeperImpl final : public caps::Keeper::Server {
 public:
  Result<caps::Holder> hold(std::string_view label) override {
    caps::Holder h;
    h.label = std::string(label);
    h.counter = caps::Counter::Client::serve(std::make_shared<CounterImpl>(live_, "counter", 1));
    h.setOther(caps::Counter::Client::serve(std::make_shared<CounterImpl>(live_, "other", 2)));
    h.all = {h.counter, caps::Counter::Client::serve(std::make_shared<CounterImpl>(live_, "third", 3))};
    return h;
  }
  Result<int64_t> sum(std::span<const Cap<caps::Counter>> counters) override {
    int64_t total = 0;
    for (const auto& c : counters) {
      Result<int64_t> v = c.client().add(0);
      if (!v.isOk()) return v.status();
      total = wrapAdd(total, *v);
    }
    return total;
  }
  Result<int64_t> nested(const caps::Holder& h) override {
    Result<int64_t> total = sum(h.all);
    if (!total.isOk()) return total;
    for (caps::Counter::Client c : {caps::Counter::Client(h.counter), caps::Counter::Client(h.getOther())}) {
      Result<int64_t> v = c.add(0);
      if (!v.isOk()) return v.status();
      *total = wrapAdd(*total, *v);
    }
    return total;
  }
  Result<uint32_t> live() override { return live_->load(); }

 private:
  std::shared_ptr<std::atomic<uint32_t>> live_ = std::make_shared<std::atomic<uint32_t>>(0);
};

class VaultImpl final : public caps::Vault::Server {
 public:
  Result<uint32_t> put(std::string_view name, const Capability::Client& cap) override {
    MutexLock lock(mu_);
    kept_.erase(std::remove_if(kept_.begin(), kept_.end(), [&](const auto& k) { return k.first == name; }),
                kept_.end());
    kept_.emplace_back(std::string(name), cap);
    std::sort(kept_.begin(), kept_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    return static_cast<uint32_t>(kept_.size());
  }
  Result<Capability::Client> get(std::string_view name) override {
    MutexLock lock(mu_);
    for (const auto& [n, cap] : kept_) {
      if (n == name) return cap;
    }
    return Capability::Client();
  }
  Result<std::vector<caps::Slot>> slots() override {
    MutexLock lock(mu_);
    std::vector<caps::Slot> out;
    for (const auto& [n, cap] : kept_) {
      caps::Slot s;
      s.name = n;
      s.cap = cap;
      out.push_back(std::move(s));
    }
    return out;
  }
  Result<int64_t> addThrough(const Capability::Client& cap, int64_t n) override {
    return cap.castAs<caps::Counter>().add(n);
  }
  Result<Capability::Client> make(int64_t start) override {
    return Capability::Client(caps::Counter::Client::serve(std::make_shared<CounterImpl>(live_, "made", start)));
  }
  Status clear() override {
    std::vector<std::pair<std::string, Capability::Client>> dropped;  // released outside the lock
    MutexLock lock(mu_);
    dropped.swap(kept_);
    return {};
  }

 private:
  Mutex mu_;
  std::vector<std::pair<std::string, Capability::Client>> kept_ LRPC_GUARDED_BY(mu_);
  std::shared_ptr<std::atomic<uint32_t>> live_ = std::make_shared<std::atomic<uint32_t>>(0);
};

// Capabilities of no declared interface (Capability) through `vault` (a fresh server), with
// counters of `factory` (another service of the same server) and of the vault itself; `other`
// is a second binding to the same vault.
inline void checkUntypedCapabilities(caps::Vault::Client& vault, caps::Vault::Client& other,
                                     caps::Factory::Client& factory) {
  auto a = factory.make("a", 10);
  ASSERT_TRUE(a.isOk()) << a.status().toString();
  // Any Client converts to a Capability; the server casts it and calls it.
  auto through = vault.addThrough(*a, 5);
  ASSERT_TRUE(through.isOk()) << through.status().toString();
  EXPECT_EQ(*through, 15);
  // Kept untyped, handed back, cast by the client: calls reach the same object.
  EXPECT_EQ(*vault.put("a", *a), 1u);
  EXPECT_EQ(*vault.put("none", Capability::Client()), 2u);
  auto back = vault.get("a");
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  ASSERT_FALSE(back->isNull());
  auto counter = back->castAs<caps::Counter>();
  EXPECT_EQ(*counter.add(1), 16);
  EXPECT_EQ(*counter.label(), "a");
  // A derived interface's object, cast to its base and to itself.
  auto special = factory.special(100);
  ASSERT_TRUE(special.isOk()) << special.status().toString();
  EXPECT_EQ(*vault.put("s", *special), 3u);
  auto s = vault.get("s");
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  EXPECT_EQ(*s->castAs<caps::Special>().twice(1), 102);
  EXPECT_EQ(*s->castAs<caps::Counter>().add(1), 103);
  // A wrong cast fails at the call, clearly, and leaves the capability usable: here, where
  // this process knows the object's interface (it serves the proxy), as a wrong binding.
  auto wrong = back->castAs<caps::Named>().name();
  EXPECT_EQ(wrong.status().code(), Errc::kBindingRejected) << wrong.status().toString();
  EXPECT_EQ(*counter.add(0), 16);
  // The null capability stays null; cast, its calls fail as an unbound Client's do.
  auto none = vault.get("none");
  ASSERT_TRUE(none.isOk()) << none.status().toString();
  EXPECT_TRUE(none->isNull());
  EXPECT_EQ(none->castAs<caps::Counter>().add(1).status().code(), Errc::kBindingRejected);
  EXPECT_TRUE(vault.get("missing")->isNull());
  // Inside a struct, in a List.
  auto slots = vault.slots();
  ASSERT_TRUE(slots.isOk()) << slots.status().toString();
  ASSERT_EQ(slots->size(), 3u);
  EXPECT_EQ((*slots)[0].name, "a");
  EXPECT_EQ(*Capability::Client((*slots)[0].cap).castAs<caps::Counter>().add(0), 16);
  EXPECT_TRUE(Capability::Client((*slots)[1].cap).isNull());
  // The vault's own object, returned untyped; a received one passed back untyped.
  auto made = vault.make(7);
  ASSERT_TRUE(made.isOk()) << made.status().toString();
  EXPECT_EQ(*made->castAs<caps::Counter>().add(1), 8);
  EXPECT_EQ(*vault.addThrough(*made, 2), 10);
  // Received untyped, a wrong cast is refused by the object's owner.
  auto wrongMade = made->castAs<caps::Named>().name();
  EXPECT_EQ(wrongMade.status().code(), Errc::kBadFrame) << wrongMade.status().toString();
  EXPECT_EQ(*made->castAs<caps::Counter>().add(0), 10);
  // Passed on to another binding: untyped it cannot be (its proxy would not know what it
  // forwards), cast it can.
  auto untyped = other.put("passed", *made);
  EXPECT_EQ(untyped.status().code(), Errc::kUnsupported) << untyped.status().toString();
  auto typed = other.put("passed", made->castAs<caps::Counter>());
  ASSERT_TRUE(typed.isOk()) << typed.status().toString();
  EXPECT_EQ(*other.addThrough(*other.get("passed"), 1), 11);
  EXPECT_EQ(*vault.put("passed", Capability::Client()), 4u);  // the proxy is dropped
  // An object this process serves, passed untyped to the server, which calls it back (where
  // the path carries callbacks) or hands it back: in process, it calls the object directly.
  auto live = std::make_shared<std::atomic<uint32_t>>(0);
  auto mine = caps::Counter::Client::serve(std::make_shared<CounterImpl>(live, "mine", 40));
  EXPECT_EQ(*vault.put("mine", mine), 5u);
  auto mineBack = vault.get("mine");
  ASSERT_TRUE(mineBack.isOk()) << mineBack.status().toString();
  EXPECT_EQ(*mineBack->castAs<caps::Counter>().add(2), 42);
  EXPECT_EQ(*vault.addThrough(mine, 1), 43);
  // Released when the last reference goes: the vault's and ours.
  EXPECT_TRUE(vault.clear().isOk());
  a = Status(Errc::kCancelled);
  back = Status(Errc::kCancelled);
  counter = caps::Counter::Client();
  slots = Status(Errc::kCancelled);
  special = Status(Errc::kCancelled);
  s = Status(Errc::kCancelled);
  // The vault held them through proxies this process served: their releases come as it lets go.
  for (int i = 0; i < 500 && *factory.live() != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(*factory.live(), 0u);
  made = Status(Errc::kCancelled);
  mine = caps::Counter::Client();
  mineBack = Status(Errc::kCancelled);
  for (int i = 0; i < 500 && live->load() != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(live->load(), 0u);
}

// Capabilities inside values, through `keeper` (a fresh server).
inline void checkNestedCapabilities(caps::Keeper::Client& keeper) {
  auto h = keeper.hold("h");
  ASSERT_TRUE(h.isOk()) << h.status().toString();
  EXPECT_EQ(h->label, "h");
  EXPECT_EQ(*h->counter.client().add(0), 1);
  ASSERT_TRUE(h->isOther());
  EXPECT_EQ(*caps::Counter::Client(h->getOther()).add(0), 2);
  ASSERT_EQ(h->all.size(), 2u);
  EXPECT_EQ(*h->all[1].client().label(), "third");
  EXPECT_EQ(*keeper.live(), 3u);
  // Passed back inside a List and inside a struct.
  auto sum = keeper.sum(h->all);
  ASSERT_TRUE(sum.isOk()) << sum.status().toString();
  EXPECT_EQ(*sum, 4);
  auto nested = keeper.nested(*h);
  ASSERT_TRUE(nested.isOk()) << nested.status().toString();
  EXPECT_EQ(*nested, 7);
  // A null capability inside a value stays null.
  caps::Holder empty;
  auto none = keeper.nested(empty);
  EXPECT_EQ(none.status().code(), Errc::kBindingRejected) << none.status().toString();
  EXPECT_EQ(*keeper.sum({}), 0);
  h = Status(Errc::kCancelled);
  EXPECT_EQ(*keeper.live(), 0u);
}

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

  // Inheritance: a Special is a Counter, as a Client, as an argument and as a result.
  auto special = factory.special(7);
  ASSERT_TRUE(special.isOk()) << special.status().toString();
  EXPECT_EQ(*special->twice(1), 9);
  caps::Counter::Client asCounter = *special;  // the same object, through the same binding
  EXPECT_EQ(*asCounter.add(1), 10);
  EXPECT_EQ(*asCounter.label(), "special");
  auto readSpecial = factory.read(*special);  // passed where a Counter is declared
  ASSERT_TRUE(readSpecial.isOk()) << readSpecial.status().toString();
  EXPECT_EQ(*readSpecial, 10);
  auto returned = factory.asCounter(3);  // returned where a Counter is declared
  ASSERT_TRUE(returned.isOk()) << returned.status().toString();
  EXPECT_EQ(*returned->add(1), 4);
  EXPECT_EQ(*factory.live(), 2u);
  special = Status(Errc::kCancelled);
  asCounter = caps::Counter::Client();
  returned = Status(Errc::kCancelled);
  EXPECT_EQ(*factory.live(), 0u);
}

// A second base: a Tagged (extends Counter, then Named) converts to Counter through its own
// binding and to Named through an adaptor served in this process, which can be passed where a
// Named is declared (a callback).
inline void checkSecondBase(caps::Factory::Client& factory) {
  auto tagged = factory.tagged(5, "t5");
  ASSERT_TRUE(tagged.isOk()) << tagged.status().toString();
  EXPECT_EQ(*tagged->tag(), "tag:t5");
  EXPECT_EQ(*tagged->name(), "t5");
  caps::Counter::Client asCounter = *tagged;  // the first base: the same binding
  EXPECT_EQ(*asCounter.add(1), 6);
  caps::Named::Client named = *tagged;  // the second base: the adaptor
  auto n = named.name();
  ASSERT_TRUE(n.isOk()) << n.status().toString();
  EXPECT_EQ(*n, "t5");
  {
    const Cap<caps::Named> cap = *tagged;
    EXPECT_EQ(*cap.client().name(), "t5");
  }
  EXPECT_EQ(caps::Named::Client(caps::Tagged::Client()).name().status().code(), Errc::kBindingRejected);  // null stays null
  auto passed = factory.nameOf(named);
  ASSERT_TRUE(passed.isOk()) << passed.status().toString();
  EXPECT_EQ(*passed, "t5");
  named = caps::Named::Client();
  asCounter = caps::Counter::Client();
  tagged = Status(Errc::kCancelled);
  EXPECT_EQ(*factory.live(), 0u);
}

// Asynchronous calls returning capabilities, and on a received capability, through `factory`
// (a fresh server): 20 adds in flight at once on one counter, completed by a queue.
inline void checkAsyncCapabilities(caps::Factory::Client& factory) {
  Completions queue;
  Result<caps::Counter::Client> counter = factory.async(queue).make("async", 100).wait();
  ASSERT_TRUE(counter.isOk()) << counter.status().toString();
  std::vector<int64_t> totals;
  for (int i = 0; i < 20; ++i) {
    counter->async(queue).add(1).then(queue, [&totals](Result<int64_t> r) { totals.push_back(r.isOk() ? *r : -1); });
  }
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (totals.size() < 20 && std::chrono::steady_clock::now() < end) queue.run(std::chrono::milliseconds(50));
  std::sort(totals.begin(), totals.end());
  ASSERT_EQ(totals.size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(totals[size_t(i)], 101 + i);  // each add ran once
  EXPECT_EQ(counter->add(0).value(), 120);
  *counter = caps::Counter::Client();  // the last reference: released
  EXPECT_EQ(*factory.live(), 0u);
}

}  // namespace lrpc::testing

namespace lrpc::testing {

// A client's object for callbacks: notify answers n + offset.
class ListenerImpl final : public caps::Listener::Server {
 public:
  ListenerImpl(std::shared_ptr<std::atomic<uint32_t>> live, int64_t offset) : live_(std::move(live)), offset_(offset) {
    ++*live_;
  }
  ~ListenerImpl() override { --*live_; }
  Result<int64_t> notify(int64_t n) override {
    ++calls;
    return wrapAdd(n, offset_);
  }
  Result<int64_t> take(const caps::Counter::Client& counter) override { return counter.add(1); }

  std::atomic<uint32_t> calls{0};

 private:
  std::shared_ptr<std::atomic<uint32_t>> live_;
  int64_t offset_;
};

class BrokerImpl final : public caps::Broker::Server {
 public:
  explicit BrokerImpl(caps::Factory::Client upstream) : upstream_(std::move(upstream)) {}
  // The other server's capability, returned as it came: this process passes it on as a proxy.
  Result<caps::Counter::Client> relay(std::string_view label, int64_t start) override {
    return upstream_.make(label, start);
  }
  Result<int64_t> read(const caps::Counter::Client& counter) override { return counter.add(0); }

 private:
  caps::Factory::Client upstream_;
};

class LoudListenerImpl final : public caps::LoudListener::Server {
 public:
  Result<int64_t> notify(int64_t n) override { return wrapAdd(n, 7); }
  Result<int64_t> take(const caps::Counter::Client& counter) override { return counter.add(7); }
  Result<uint32_t> volume() override { return 11; }
};

class PublisherImpl final : public caps::Publisher::Server {
 public:
  Result<int64_t> ping(const caps::Listener::Client& listener, int64_t n) override { return listener.notify(n); }
  Result<uint32_t> subscribe(const caps::Listener::Client& listener) override {
    MutexLock lock(mu_);
    kept_.push_back(listener);
    return static_cast<uint32_t>(kept_.size());
  }
  Result<caps::Publisher::PublishResults> publish(int64_t n) override {
    std::vector<caps::Listener::Client> kept;
    {
      MutexLock lock(mu_);
      kept = kept_;
    }
    caps::Publisher::PublishResults out{};
    std::vector<caps::Listener::Client> alive;
    for (auto& l : kept) {
      Result<int64_t> r = l.notify(n);
      if (r.isOk()) {
        out.sum = wrapAdd(out.sum, *r);
        ++out.answered;
        alive.push_back(l);
      } else if (r.status().code() != Errc::kPeerDied) {
        return r.status();
      }
    }
    MutexLock lock(mu_);
    kept_ = std::move(alive);
    return out;
  }
  Status clear() override {
    std::vector<caps::Listener::Client> dropped;  // released outside the lock
    MutexLock lock(mu_);
    dropped.swap(kept_);
    return {};
  }
  Status clearThenFail() override {
    (void)clear();
    return Status(Errc::kApplication, "cleared, then failed");
  }
  Result<std::vector<uint8_t>> clearAndPad(uint32_t bytes) override {
    (void)clear();
    return std::vector<uint8_t>(bytes);
  }
  void clearLater(Reply<void>&& reply) override {
    (void)clear();
    reply.send();
  }
  Result<int64_t> clearThenPing(const caps::Listener::Client& listener, int64_t n) override {
    (void)clear();
    return listener.notify(n);
  }
  Result<caps::Listener::Client> back(const caps::Listener::Client& listener) override { return listener; }
  Result<int64_t> lend(const caps::Listener::Client& listener, int64_t start) override {
    return listener.take(caps::Counter::Client::serve(std::make_shared<CounterImpl>(live_, "lent", start)));
  }
  Result<int64_t> notifyAll(std::span<const Cap<caps::Listener>> listeners, int64_t n) override {
    int64_t sum = 0;
    for (const auto& l : listeners) {
      Result<int64_t> r = l.client().notify(n);
      if (!r.isOk()) return r.status();
      sum = wrapAdd(sum, *r);
    }
    return sum;
  }
  Result<int64_t> notifyAudience(const caps::Audience& audience, int64_t n) override {
    Result<int64_t> first = audience.first.client().notify(n);
    if (!first.isOk()) return first;
    Result<int64_t> all = notifyAll(audience.all, n);
    if (!all.isOk()) return all;
    return wrapAdd(*first, *all);
  }
  Status notifyLater(const caps::Listener::Client& listener, int64_t n) override {
    Pending<Result<int64_t>> started = listener.async().notify(n);
    MutexLock lock(mu_);
    later_.push_back(std::move(started));
    return {};
  }
  Result<int64_t> collectLater() override {
    std::vector<Pending<Result<int64_t>>> later;
    {
      MutexLock lock(mu_);
      later.swap(later_);
    }
    int64_t sum = 0;
    for (auto& p : later) {
      Result<int64_t> r = p.wait();
      if (!r.isOk()) return r.status();
      sum = wrapAdd(sum, *r);
    }
    return sum;
  }
  Result<caps::Audience> echo(const caps::Audience& audience) override { return audience; }
  Result<uint32_t> subscribeAudience(const caps::Audience& audience) override {
    MutexLock lock(mu_);
    kept_.push_back(audience.first.client());
    for (const auto& l : audience.all) kept_.push_back(l.client());
    return static_cast<uint32_t>(kept_.size());
  }

 private:
  std::shared_ptr<std::atomic<uint32_t>> live_ = std::make_shared<std::atomic<uint32_t>>(0);
  Mutex mu_;
  std::vector<caps::Listener::Client> kept_ LRPC_GUARDED_BY(mu_);
  std::vector<Pending<Result<int64_t>>> later_ LRPC_GUARDED_BY(mu_);  // notifyLater's
};


// Objects the client serves inside values, through `publisher` (a fresh server: no kept
// listeners): as List elements, in a struct's field and its List, returned inside a struct,
// and kept by the server from inside one. Each call back is counted here, where the objects live.
inline void checkClientObjectsInsideValues(caps::Publisher::Client& publisher) {
  auto live = std::make_shared<std::atomic<uint32_t>>(0);
  std::vector<std::shared_ptr<ListenerImpl>> impls;
  std::vector<caps::Listener::Client> listeners;
  for (int64_t offset : {100, 200, 300}) {
    impls.push_back(std::make_shared<ListenerImpl>(live, offset));
    listeners.push_back(caps::Listener::Client::serve(impls.back()));
  }
  const auto calls = [&impls] {
    std::vector<uint32_t> out;
    for (const auto& impl : impls) out.push_back(impl->calls.load());
    return out;
  };
  std::vector<Cap<caps::Listener>> list(listeners.begin(), listeners.end());
  auto sum = publisher.notifyAll(list, 1);
  ASSERT_TRUE(sum.isOk()) << sum.status().toString();
  EXPECT_EQ(*sum, 101 + 201 + 301);
  EXPECT_EQ(calls(), (std::vector<uint32_t>{1, 1, 1}));
  // The same object in the field and in the List: called back through each.
  caps::Audience audience;
  audience.label = "a";
  audience.first = listeners[0];
  audience.all = {listeners[1], listeners[2], listeners[0]};
  auto held = publisher.notifyAudience(audience, 2);
  ASSERT_TRUE(held.isOk()) << held.status().toString();
  EXPECT_EQ(*held, 102 + 202 + 302 + 102);
  EXPECT_EQ(calls(), (std::vector<uint32_t>{3, 2, 2}));
  // Returned inside a struct: our own objects, whose calls stay in this process.
  auto back = publisher.echo(audience);
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(back->label, "a");
  EXPECT_EQ(*back->first.client().notify(3), 103);
  ASSERT_EQ(back->all.size(), 3u);
  EXPECT_EQ(*back->all[0].client().notify(3), 203);
  EXPECT_EQ(*back->all[1].client().notify(3), 303);
  EXPECT_EQ(*back->all[2].client().notify(3), 103);
  EXPECT_EQ(calls(), (std::vector<uint32_t>{5, 3, 3}));
  // Kept from inside a value, called later, released when the server drops them.
  auto kept = publisher.subscribeAudience(audience);
  ASSERT_TRUE(kept.isOk()) << kept.status().toString();
  EXPECT_EQ(*kept, 4u);
  auto published = publisher.publish(4);
  ASSERT_TRUE(published.isOk()) << published.status().toString();
  EXPECT_EQ(published->answered, 4u);
  EXPECT_EQ(published->sum, 104 + 204 + 304 + 104);
  EXPECT_EQ(calls(), (std::vector<uint32_t>{7, 4, 4}));
  back = Status(Errc::kCancelled);
  audience = {};
  list.clear();
  listeners.clear();
  impls.clear();
  EXPECT_EQ(live->load(), 3u) << "the server still holds all three";
  ASSERT_TRUE(publisher.clear().isOk());
  EXPECT_EQ(live->load(), 0u) << "released when the server dropped them";
}

}  // namespace lrpc::testing
