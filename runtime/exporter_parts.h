// The Exporter's inner parts, shared by the files that implement its roles (runtime/exporter.h
// describes them): the acceptor (acceptor.cc) takes connections on a name's socket, a clerk
// per binding (clerk.cc) checks the client, makes the region and answers its requests, and
// a server thread per A-stack in use (astack_server.cc) runs calls. Internal: not installed
// for users' code to include, and not part of the generated-code contract.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "runtime/astack.h"
#include "runtime/base/fd.h"
#include "runtime/callbacks.h"
#include "runtime/base/mutex.h"
#include "runtime/cap_table.h"
#include "runtime/capability.h"
#include "runtime/exporter.h"
#include "runtime/protocol.h"
#include "runtime/server_call.h"
#include "runtime/shm.h"
#include "runtime/transfer.h"

namespace lrpc {

namespace exporter {
using detail::Message;
using detail::MsgType;

// How long a new connection may take to say Hello before the clerk gives up on it.
inline constexpr int kHelloTimeoutMs = 5'000;
// How long the acceptor waits for the Hello of a client it refuses for lack of room.
inline constexpr int kRefuseReadMs = 100;
// How long it waits for the Hello of a uid it refuses: short, so that a uid that may not import
// cannot slow the acceptor down much by connecting and staying silent.
inline constexpr int kRefuseUidReadMs = 20;
// How long the acceptor waits before it retries accept() after running out of descriptors.
inline constexpr int kAcceptBackoffMs = 50;
// Out-of-band segments are rounded up to a power of two (at least this), so that a
// growing stream of calls re-grows the segment a logarithmic number of times.
inline constexpr uint64_t kMinSegmentBytes = 64 * 1024;

bool uidAllowed(const ExporterOptions& opts, uid_t uid);
uint64_t segmentSize(uint64_t n);
// Makes an eventfd readable.
void signal(int eventFd);
std::string hex(uint64_t v);
}  // namespace exporter

using exporter::Message;
using exporter::MsgType;

struct Export;

// Whether a binding's memory may still be written, for deferred replies (runtime/pending.h),
// which outlive the server thread that took their call: the clerk clears `alive` before it
// stops the threads and unmaps the region, and a reply writes only while it holds `mu`.
struct Liveness {
  Mutex mu;
  bool alive LRPC_GUARDED_BY(mu) = true;
};

// A large result value a call's handler returned, to be copied into the out-of-band result
// segment after the return is published (Connection::streamReturn): `at` is its offset in the
// tail, and `segment` keeps the segment mapped until the copy is done.
struct StreamedResult {
  std::unique_ptr<KeptResult> value;
  uint32_t at = 0;
  std::shared_ptr<SharedMemory> segment;
};

// Frees a ServerSlot's call object (defined beside it, in astack_server.cc).
struct SlotCallDelete {
  void operator()(ServerCall* call) const noexcept;
};

// Server-side state of one A-stack of one binding: its server thread and its out-of-band segments.
struct ServerSlot {
  uint32_t index = 0;
  uint32_t procedure = 0;
  // Where this A-stack's blocks lie in the region, fixed at the handshake: the call path reads
  // them here instead of working them out of the layout on every call.
  AStackControl* ctl = nullptr;
  ReturnControl* ret = nullptr;
  const ProcedureLayout* pl = nullptr;
  // Where the argument's fixed part ends, counted from `ctl`, when the argument may reach past
  // the doorbell's line (a longer fixed part or any inline tail room); 0 when it cannot, so
  // that a Null or Add call decides not to prefetch with one load (prefetchArguments).
  uint32_t argLinesEnd = 0;
  std::atomic<bool> stop{false};
  // The last call taken on this A-stack, by its own thread or one helping (Connection::help):
  // whoever moves it to a call's sequence number runs that call, exactly once.
  std::atomic<uint32_t> served{0};
  // The last call whose results are written: the next server of this A-stack, maybe another
  // thread, starts after it (claim). Within this process the rest of that chain (our return
  // doorbell, the client's next call) goes through the client, out of ThreadSanitizer's sight.
  std::atomic<uint32_t> finished{0};
  // Set by a thread that helps with this A-stack's call (Connection::help) to its own A-stack,
  // before it claims the call: whichever of the two threads takes it back first (this
  // A-stack's own thread when it finds its call taken, or the helper when the call is done)
  // serves that A-stack from then on, and the other one this. So a helped call that blocks
  // (on another call of the same client) never leaves an A-stack without a thread.
  std::atomic<ServerSlot*> handoff{nullptr};
  // Its current call's answer against its dispatch, if deferred; `deferWritten` is what an
  // early answer wrote (for demoteAfterFirstLine), handed over by that race.
  detail::DeferRace deferRace;
  uint32_t deferWritten = 0;
  // Started for this A-stack; after hand-overs it may serve another (stopThreads stops all).
  // Under its Connection's threadsMu, which this struct cannot name. `threadId` outlives the
  // move of `thread` out for the join (stopThreads), so that runsOn still knows a thread
  // that is being stopped: one that drops its own callback host must not join itself.
  Guarded<std::thread> thread;
  Guarded<std::thread::id> threadId;
  alignas(kCacheLine) std::atomic<uint64_t> calls{0};  // written by whoever serves a call (one at a time)
  std::atomic<uint64_t> errors{0};
  Mutex segMu;
  std::shared_ptr<SharedMemory> argSegment LRPC_GUARDED_BY(segMu);
  std::shared_ptr<SharedMemory> resultSegment LRPC_GUARDED_BY(segMu);
  // The copy "E" buffer of the last large Data argument (detail::SpareBytes), for the next:
  // used only by whoever serves this A-stack's current call (the served/finished chain orders
  // them). At most the largest Data argument this binding has sent; freed with the binding.
  std::vector<uint8_t> spareBytes;
  // The storage of the last large Data result copied out (ServerCall::keepResultStorage), for
  // the next handler's lrpc::resultBuffer(): the same rules, at most the largest result.
  std::vector<uint8_t> spareResultBytes;
  // The call object of this A-stack's calls, made at its first call and reset for each one:
  // most of its fields are the A-stack's and never change, and building all of them on every
  // call cost a Null call's server a measurable share of its time. The same rules as
  // spareBytes: used only by whoever serves the A-stack's current call.
  std::unique_ptr<ServerCall, SlotCallDelete> call;
};

// One binding: a client process bound to one exported name. Its clerk thread owns it.
struct Connection {
  Export* exp = nullptr;
  OwnedFd sock;
  std::optional<SharedMemory> region;
  uint64_t key = 0;
  TransferMode mode = TransferMode::kAdaptive;
  // The objects this binding's client may call by id (runtime/capability.h). Before `slots`:
  // members die in reverse order, and no server thread may outlive the objects it calls.
  std::unique_ptr<CapTable> caps;
  // The client's callback binding (runtime/callbacks.h), once it has sent one: how calls on the
  // objects it passed reach it. Set once by the clerk, under the lock, before callbacksReady;
  // cleared by the teardown, under the lock, after it has joined the server threads and waited
  // for the guests. Between the two it does not change, so those threads read it without the
  // lock (callbackBinding): a callback's server side looks it up twice per call.
  mutable Mutex callbacksMu;
  std::shared_ptr<Binding> callbacks LRPC_GUARDED_BY(callbacksMu);
  std::atomic<bool> callbacksReady{false};
  // Orders the changes below, and starting or joining a slot's thread, against stats() and
  // runsOn().
  mutable Mutex threadsMu;
  // One per A-stack: made at the handshake and cleared at teardown, by the clerk under
  // threadsMu. In between the vector does not change, so the server threads and the clerk
  // read it through made() without the lock.
  std::vector<std::unique_ptr<ServerSlot>> slots LRPC_GUARDED_BY(threadsMu);
  const std::vector<std::unique_ptr<ServerSlot>>& made() const LRPC_NO_THREAD_SAFETY_ANALYSIS { return slots; }
  std::shared_ptr<Liveness> live = std::make_shared<Liveness>();  // held by deferred replies
  // Server threads started for this binding's A-stacks: with one, nobody needs help.
  std::atomic<uint32_t> threadsStarted{0};
  // The slots whose threads have started, the first threadsStarted of them, in the order they
  // started (written by the clerk, one per A-stack at most): what help() and serveGuest() look
  // at on every pass. Most of a binding's A-stacks never get a thread, and a look at all of
  // them on each pause is the time a spinning server thread or guest takes to see its call.
  std::unique_ptr<std::atomic<ServerSlot*>[]> startedSlots;
  // startedSlots, as far as threadsStarted says they are filled in.
  std::span<std::atomic<ServerSlot*>> started() const noexcept {
    // Acquire: pairs with the clerk's release after it wrote the newest entry.
    return {startedSlots.get(), threadsStarted.load(std::memory_order_acquire)};
  }
  std::atomic<bool> finished{false};
  // Set once the client has passed callbacks: its calls then say which call a callback serves.
  std::atomic<bool> hasCallbacks{false};
  // A callback binding's (runtime/callbacks.h): the forward binding's callers that run their
  // calls' callbacks, and how many threads run them now (the teardown waits for none).
  detail::GuestSeats guestSeats;
  std::atomic<uint32_t> guests{0};
  // The handshake made the region and the slots: guests may look at them from now on.
  std::atomic<bool> guestReady{false};
  // The teardown has begun: no guest enters any more. Apart from live->alive, so that a guest
  // enters with no lock (enterGuest runs on every call of a binding that passed callbacks).
  std::atomic<bool> guestsClosed{false};
  bool query = false;  // an operator's query (runtime/introspect.h), not a binding
  std::thread clerk;

  AStackControl* control(uint32_t i) const;
  void run();
  Status handshake();
  bool handle(const Message& m, OwnedFd fd);
  bool importCallbacks(OwnedFd fd);
  std::shared_ptr<Binding> callbackBinding() const LRPC_NO_THREAD_SAFETY_ANALYSIS;
  // Whether `id` is this binding's clerk or one of its server threads.
  bool runsOn(std::thread::id id) const;
  // Runs calls on the slot's A-stack (and, after hand-overs, on another's); `last` is the
  // sequence seen before the client was told the thread exists (so its first call is not
  // mistaken for an old one).
  void serve(ServerSlot* slot, uint32_t last);
  // runCall's dispatch on a binding whose client passed callbacks: the call names its origin
  // (runtime/callbacks.h), and the first of the client's objects the handler drops comes back in
  // *released. Out of line, so that the common dispatch builds neither.
  Status dispatchWithCallbacks(ServerSlot* slot, uint32_t procedure, ServerCall& call,
                               const std::atomic<uint32_t>* guestSeq, uint32_t seq, uint32_t* released);
  // Writes the return block of a call of `slot` answered with `s` (results already in place:
  // a tail of `tail` bytes with `flags`; `releasedId`: a callback of the client's that the
  // handler dropped, or 0); returns how many bytes from the block it wrote.
  uint32_t writeReturn(ServerSlot* slot, std::byte* frame, uint32_t procedure, const Status& s, uint32_t tail,
                       uint8_t flags, uint32_t releasedId = 0);
  // Serves call `seq` of `slot` and rings its return doorbell (unless deferred: then its reply does).
  void runCall(ServerSlot* slot, uint32_t seq);
  // A call's control fields, as runCall read them (each once).
  struct CallFields {
    uint64_t key;
    uint32_t procedure;
    uint32_t argTail;
    uint8_t argFlags;
  };
  // runCall for every call but the common one: a wrong key or procedure, an argument tail out of
  // band, the A-stack's first call, a binding whose client passed callbacks.
  void runGeneralCall(ServerSlot* slot, uint32_t seq, const CallFields& f);
  // The end of a call whose handler has run, for every return but an ok one with its result tail
  // inline: an error, a deferred answer, a result tail out of band (maybe streamed). Drops what
  // the call object holds.
  void finishCall(ServerSlot* slot, uint32_t seq, uint32_t procedure, Status s, uint32_t released);
  // Lets the client of `slot` see call `seq`'s return block, `written` bytes of which are new.
  void publish(ServerSlot* slot, uint32_t seq, uint32_t written);
  // publish() without handing the A-stack to its next server (streamReturn does that later).
  void ringReturn(ServerSlot* slot, uint32_t seq, uint32_t written);
  // Publishes call `seq`'s ok return with its result tail (`tail` bytes) still being written,
  // then copies the kept value into place a chunk at a time, counting each in resultReady, so
  // that the client copies it out meanwhile (astack_format.md, "Streaming a large result").
  void streamReturn(ServerSlot* slot, std::byte* frame, uint32_t procedure, uint32_t seq, uint32_t tail,
                    uint32_t released, StreamedResult r);
  // Serves one call that has waited on another started A-stack than `*self`'s since the last
  // look (`seen`: per A-stack, the call seen waiting then): a thread whose own A-stack is idle
  // runs it instead of that A-stack's thread, which is then likely not running (more A-stacks
  // busy than the server has cores). Its own A-stack is handed over first (ServerSlot::handoff);
  // *self becomes the A-stack it serves afterwards. True if it served one or moved.
  bool help(ServerSlot** self, std::vector<uint32_t>& seen);
  // The call rung on `slot` (one of started()) and not yet served, if `wanted(seq, control)`
  // takes it and the A-stack is not stopping: what help() and serveGuest() look at before they
  // claim() a call.
  template <class Wanted>
  std::optional<uint32_t> waitingCall(const ServerSlot& slot, Wanted&& wanted) const noexcept;
  // A callback binding's guests (CallbackHost::enterGuest and the rest).
  bool enterGuest() noexcept;
  void leaveGuest() noexcept;
  bool serveGuest(uint16_t origin, detail::LazyDeadline* arm) noexcept;
  // Whether call `seq` just rung on `slot` is for a waiting guest to run, not for us.
  bool forGuest(ServerSlot* slot) const noexcept;
  void stopThreads();
};

struct Export {
  Exporter::Impl* owner = nullptr;
  std::string name;
  const InterfaceDescriptor* iface = nullptr;
  void* impl = nullptr;
  std::optional<RegionLayout> layout;
  std::string sockPath;
  OwnedFd nameLock; // flock held while we serve the name
  OwnedFd listen;
  OwnedFd stopFd;   // eventfd, readable once the Exporter shuts down
  OwnedFd reapFd;   // eventfd, a clerk finished: join it
  std::thread acceptor;
  std::atomic<uint64_t> bindingsLive{0};  // of this name (the Exporter's counter sums all names)
  mutable Mutex connMu;
  std::list<std::unique_ptr<Connection>> conns LRPC_GUARDED_BY(connMu);

  void accept();
  void reap(bool all);
};

struct Exporter::Impl {
  const Exporter* self = nullptr;  // for the stats a query asks for (an Exporter never moves)
  ExporterOptions options;
  Result<std::string> dir = Status(Errc::kNotFound);
  std::string noDir;  // what dir() returns when `dir` failed
  std::atomic<uint64_t> bindingsLive{0}, bindingsTotal{0}, bindingsRejected{0}, serverThreads{0};
  std::atomic<uint64_t> callsFinished{0}, errorsFinished{0};  // of threads already joined
  mutable Mutex mu;
  std::vector<std::unique_ptr<Export>> exports LRPC_GUARDED_BY(mu);
};

}  // namespace lrpc
