// Releases that ride on a reply. Over UDP the objects a client passes live in its callback
// host, reached from the server by a channel of its own (transport/callback_host.h), so the
// release of one that a handler drops was a round trip on that channel, made before the reply
// went out, with a wake-up of the host at the far end. While a UDP server runs a handler, the
// handler's thread has a ReplyReleases instead: a release on the channel back to the very
// client it serves is noted there, and the server sends it on the call's reply, which the client
// reads before its call returns. So the object is still gone when the call returns, as the
// round trip made sure. The same-host server does the same for a binding with callbacks: the
// first release rides on the A-stack's return (runtime/astack_format.md, "Releases ride on
// the return").
//
// Internal: the runtime (CapChannel, the A-stack server) and the UDP server use it; generated
// code does not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace lrpc {

class Binding;
class ServerCall;

namespace detail {

class ReplyReleases {
 public:
  // Ids one reply carries at most; the rest of a handler's drops are round trips, as before.
  static constexpr size_t kMax = 16;

  // Installs itself as this thread's until destroyed. The releases it takes are those on
  // `call.peerCallbacks()`: the channel back to the client `call` serves.
  explicit ReplyReleases(ServerCall& call) noexcept;
  ~ReplyReleases();
  ReplyReleases(const ReplyReleases&) = delete;
  ReplyReleases& operator=(const ReplyReleases&) = delete;

  // From a dropped import's destructor: true if this thread's reply now carries the release of
  // `id` on `root` (the caller then sends none). False outside a handler that has one, for an
  // object of another client, once the call is cancelled (its reply may never be read), or
  // when full.
  static bool take(const Binding& root, uint32_t id) noexcept;

  // The handler is done: later drops release by round trips.
  void close() noexcept { open_ = false; }
  std::span<const uint32_t> ids() const noexcept { return {ids_, count_}; }
  // For a reply that cannot carry them (an error, a deferred answer, no room in one
  // datagram): each released now, by a round trip on the channel back.
  void releaseNow() noexcept { releaseFrom(0); }
  // The same for every id but the first `kept`, which the reply carries.
  void releaseFrom(size_t kept) noexcept;

 private:
  ServerCall& call_;
  ReplyReleases* outer_;
  std::shared_ptr<Binding> root_;  // the channel back, looked up at the first take()
  bool looked_ = false;
  bool open_ = true;
  uint32_t count_ = 0;
  uint32_t ids_[kMax];
};

// Releases the import `id` of the channel back `root` now: a tunnelled round trip, bounded
// by 200 ms (a peer that is gone has dropped the object already).
void releaseByRoundTrip(const Binding& root, uint32_t id) noexcept;

}  // namespace detail
}  // namespace lrpc
