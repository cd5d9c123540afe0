// What a call that waits for a free A-stack runs now and then meanwhile
// (LocalBinding::acquireSlow): an asynchronous call's queue completes the calls its thread
// holds, so that their A-stacks come back (CompletionState::reclaim). Nothing for a
// synchronous call.
#pragma once

namespace lrpc::detail {

struct Reclaim {
  void (*fn)(void*) = nullptr;
  void* context = nullptr;
};

}  // namespace lrpc::detail
