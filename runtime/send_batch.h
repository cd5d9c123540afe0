// Sends of a burst of asynchronous calls in one system call: while an lrpc::SendBatch lives on
// a thread, the network requests that thread's asynchronous calls make are held by their
// channels, and leave together, one system call per channel, when the batch ends (or flush()).
//
//   {
//     lrpc::SendBatch batch;
//     for (auto& key : keys) pending.push_back(client.async().get(key));
//   }  // the requests leave here
//
// The thread never waits for a held request: a wait, poll or synchronous call on this thread
// sends the held ones first. Same-host calls are not held (a call is a store to shared memory,
// no system call). Nested batches: the innermost holds, each sends what it held.
#pragma once

#include <memory>
#include <vector>

namespace lrpc {

namespace detail {
// A channel that holds requests for a batch (transport/client.cc).
class HeldSends {
 public:
  // Sends the requests it holds; called without any of the channel's locks held.
  virtual void sendHeld() noexcept = 0;

 protected:
  ~HeldSends() = default;
};
}  // namespace detail

class SendBatch {
 public:
  SendBatch() noexcept;
  ~SendBatch() { flush(); restore(); }
  SendBatch(const SendBatch&) = delete;
  SendBatch& operator=(const SendBatch&) = delete;

  // Sends what the channels hold now; the batch goes on holding later requests.
  void flush() noexcept;

  // The batch that holds the calling thread's requests, or null.
  static SendBatch* current() noexcept;
  // A channel about to hold a request for this batch: false if it cannot be remembered (out
  // of memory), and the channel sends the request at once instead.
  bool hold(std::weak_ptr<detail::HeldSends> channel) noexcept;
  // Sends what the calling thread's batch holds (before a wait), if it has one.
  static void flushCurrent() noexcept {
    if (SendBatch* b = current()) b->flush();
  }

 private:
  void restore() noexcept;

  SendBatch* outer_;
  std::vector<std::weak_ptr<detail::HeldSends>> channels_;
};

}  // namespace lrpc
