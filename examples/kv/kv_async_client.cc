// Talks to kv_server with asynchronous calls: many in flight from one thread, completed from the
// program's own poll() loop through an lrpc::Completions queue.
//   kv_async_client [COUNT]    stores COUNT keys (default 100), then reads them all back
// Each key is handled by a coroutine of the smallest kind a program can write (Task below):
// lrpc needs no task type of its own, only C++20's co_await on an lrpc::Pending.
#include <poll.h>

#include <coroutine>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "kv.lrpc.h"
#include "runtime/import.h"

namespace {

// Starts at once and runs to its end; nobody awaits it.
struct Task {
  struct promise_type {
    Task get_return_object() noexcept { return {}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::terminate(); }
  };
};

struct Tally {
  int done = 0;
  int wrong = 0;
};

// Stores key i, then reads it back: two calls in a row, the coroutine suspended on each.
Task roundTrip(kv::KeyValue::Client kv, lrpc::Completions& queue, int i, Tally& tally) {
  const std::string key = "async-" + std::to_string(i);
  const std::string value = "value " + std::to_string(i * i);
  auto calls = kv.async(queue);
  lrpc::Result<bool> stored =
      co_await calls.put(key, std::span(reinterpret_cast<const uint8_t*>(value.data()), value.size()));
  lrpc::Result<kv::KeyValue::GetResults> got = co_await calls.get(key);
  const bool ok = stored.isOk() && got.isOk() && got->found &&
                  std::string(got->value.begin(), got->value.end()) == value;
  if (!ok) {
    std::fprintf(stderr, "kv_async_client: %s: %s\n", key.c_str(),
                 !stored.isOk() ? stored.status().toString().c_str()
                 : !got.isOk()  ? got.status().toString().c_str()
                                : "wrong value");
    ++tally.wrong;
  }
  ++tally.done;
}

}  // namespace

int main(int argc, char** argv) {
  const int count = argc > 1 ? std::atoi(argv[1]) : 100;
  lrpc::Result<kv::KeyValue::Client> kv = lrpc::import<kv::KeyValue>("kv");
  if (!kv.isOk()) {
    std::fprintf(stderr, "kv_async_client: %s\n", kv.status().toString().c_str());
    return 1;
  }
  lrpc::Completions queue;
  lrpc::Result<int> fd = queue.fd();
  if (!fd.isOk()) {
    std::fprintf(stderr, "kv_async_client: %s\n", fd.status().toString().c_str());
    return 1;
  }
  Tally tally;
  for (int i = 0; i < count; ++i) roundTrip(*kv, queue, i, tally);  // each runs to its first co_await

  // The program's own loop: here only lrpc's fd, in a real one beside its sockets and timers.
  while (tally.done < count) {
    pollfd p{*fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) {
      std::fprintf(stderr, "kv_async_client: no completion for 5 s\n");
      return 1;
    }
    queue.poll();  // resumes the coroutines whose calls have completed
  }
  std::printf("%d keys stored and read back asynchronously, %d wrong\n", count, tally.wrong);
  return tally.wrong == 0 ? 0 : 1;
}
