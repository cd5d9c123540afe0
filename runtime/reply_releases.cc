// Releases that ride on a reply (runtime/reply_releases.h): the handler thread's list.
#include "runtime/reply_releases.h"

#include "runtime/capability.h"

namespace lrpc::detail {

namespace {
thread_local ReplyReleases* tlsReplyReleases = nullptr;
}  // namespace

ReplyReleases::ReplyReleases(ServerCall& call) noexcept : call_(call), outer_(tlsReplyReleases) {
  tlsReplyReleases = this;
}

ReplyReleases::~ReplyReleases() { tlsReplyReleases = outer_; }

bool ReplyReleases::take(const Binding& root, uint32_t id) noexcept {
  ReplyReleases* r = tlsReplyReleases;
  if (r == nullptr || !r->open_ || r->count_ == kMax) return false;
  // Relaxed hint (ServerCall::cancelled): a caller that gave up may never read the reply, so
  // its releases go by round trips, which do not depend on it.
  if (r->call_.cancelled()) return false;
  if (!r->looked_) {
    // Looked up once, at the first drop: most calls drop nothing, and this copies a shared_ptr.
    r->root_ = r->call_.peerCallbacks();
    r->looked_ = true;
  }
  if (r->root_.get() != &root) return false;
  r->ids_[r->count_++] = id;
  return true;
}

void ReplyReleases::releaseFrom(size_t kept) noexcept {
  for (size_t i = kept; i < count_; ++i) releaseByRoundTrip(*root_, ids_[i]);
  if (kept < count_) count_ = static_cast<uint32_t>(kept);
}

}  // namespace lrpc::detail
