#pragma once
// Cost/<piece>: pieces of one same-host call, each timed alone in one thread with no handoff,
// so that each can be tracked and their sum set beside the paired overhead over the spin
// floor (<Call>/paired_lrpc_floor_spin, counter diff_ns):
//   Cost/astack           take and return an A-stack (a LocalCall made and dropped, not invoked):
//                         the thread's cached one (runtime/astack_cache.h)
//   Cost/astackPool       the same from the shared pool (a thread whose cached one is in use)
//   Cost/result           a Result<int32_t> built ok, checked and read
//   Cost/dispatch/<Call>  the generated server dispatch over frames in private memory: copy the
//                         arguments out and check them, run the handler, write the results
//   Cost/capDispatch/Null the server side of Null on a capability, as the tunnel delivers it:
//                         table lookup, inner dispatch over the frame where it lies, and the
//                         tunnel's results (set beside Cost/dispatch/Null)
//   Cost/capExport        a caller passing one of its own objects: the export table's add
//                         (the object's ownership copied in) and the release its call's return
//                         brings back, as a callback round trip pays them
// <Call>/inproc (lrpc_paths.cc) is the whole generated client and server code of a call in one
// thread (through the in-process channel, so a message buffer instead of an A-stack), and
// <Call>/direct the handler's virtual call alone. The client stub's own copy-in and copy-out
// are not timed apart: they are private to the generated client, and inproc holds them.
// Each piece also reports `instructions` per piece where perf_event_open can count them.

#include "bench/registry.h"

namespace lrpc::bench {

void registerBreakdown(BenchContext& ctx);

}  // namespace lrpc::bench
