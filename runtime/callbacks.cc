#include "runtime/callbacks.h"

#include <sys/eventfd.h>
#include <sys/socket.h>

#include <cerrno>
#include <thread>

#include "runtime/cap_table.h"
#include "runtime/capability.h"
#include "runtime/exporter_parts.h"

namespace lrpc::detail {

namespace {

Status dispatchCallbacks(void*, uint32_t procedure, ServerCall& call) noexcept {
  if (procedure != 0) return Status(Errc::kBadFrame, "callback binding: procedure out of range");
  return serveCapCall(call);
}

constexpr ProcedureDescriptor kCallbackProcedures[] = {capCallProcedure(0)};

}  // namespace

const InterfaceDescriptor kCallbackInterface{
    "lrpc.callbacks", 0xc7a1b5ac0bac4e11ull, 0x1c0ffee0ca11bac4ull, kCallbackProcedures, 1, &dispatchCallbacks, true};

// An Exporter of one binding, with no name and no acceptor: the clerk's socket is given.
struct CallbackHost::Parts {
  Exporter::Impl owner;
  Export exp;
  Connection conn;
};

CallbackHost::CallbackHost(std::unique_ptr<Parts> parts) noexcept : parts_(std::move(parts)) {}

Result<std::unique_ptr<CallbackHost>> CallbackHost::start(uint32_t maxCapabilities, OwnedFd* peerEnd,
                                                          GuestSeats seats) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) return Status::fromErrno(errno, "socketpair");
  OwnedFd ours(fds[0]);
  OwnedFd theirs(fds[1]);
  Result<RegionLayout> layout = RegionLayout::compute(kCallbackInterface);
  if (!layout.isOk()) return layout.status();

  auto parts = std::make_unique<Parts>();
  parts->owner.options.maxCapabilities = maxCapabilities;
  Export& e = parts->exp;
  e.owner = &parts->owner;
  e.name = "callbacks";
  e.iface = &kCallbackInterface;
  e.impl = parts.get();  // never read: the tunnel finds its objects in the connection's table
  e.layout.emplace(std::move(*layout));
  e.stopFd.reset(::eventfd(0, EFD_CLOEXEC));
  e.reapFd.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!e.stopFd.valid() || !e.reapFd.valid()) return Status::fromErrno(errno, "eventfd");
  Connection& c = parts->conn;
  c.exp = &e;
  c.sock = std::move(ours);
  c.caps = std::make_unique<CapTable>(maxCapabilities);
  c.guestSeats = seats;
  c.clerk = std::thread([&c] { c.run(); });
  *peerEnd = std::move(theirs);
  return std::unique_ptr<CallbackHost>(new CallbackHost(std::move(parts)));
}

CallbackHost::~CallbackHost() {
  exporter::signal(parts_->exp.stopFd.get());
  // One of our own threads may be what drops the last reference: an object the peer released
  // held the binding that owns us. It cannot join itself, so a thread of its own finishes the
  // job once the current one has returned from here.
  if (parts_->conn.runsOn(std::this_thread::get_id())) {
    std::thread([parts = std::move(parts_)] { parts->conn.clerk.join(); }).detach();
    return;
  }
  parts_->conn.clerk.join();
}

CapTable& CallbackHost::table() noexcept { return *parts_->conn.caps; }

bool CallbackHost::enterGuest() noexcept { return parts_->conn.enterGuest(); }
void CallbackHost::leaveGuest() noexcept { parts_->conn.leaveGuest(); }
bool CallbackHost::serveGuest(uint16_t origin, LazyDeadline* arm) noexcept {
  return parts_->conn.serveGuest(origin, arm);
}

bool GuestSeats::taken(uint16_t origin) const noexcept {
  if (base == nullptr || origin == 0 || origin > layout->astackCount()) return false;
  const auto* ret = reinterpret_cast<const ReturnControl*>(base + layout->returnOffset(origin - 1u));
  // Seq_cst fence: our load of the call word comes before this load, as the guest's clearing
  // of this word comes before its last look at the call words (LocalBinding::waitReturnAsGuest):
  // either we see it cleared, or it sees the call.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return ret->guestSeq.load(std::memory_order_relaxed) != 0;
}

namespace {
thread_local const CallOrigin* tlsOrigin = nullptr;
}  // namespace

CallOrigin::CallOrigin(const void* c, uint16_t o, const std::atomic<uint32_t>* g, uint32_t s) noexcept
    : conn(c), origin(o), guestSeq(g), seq(s), outer_(tlsOrigin) {
  tlsOrigin = this;
}

CallOrigin::~CallOrigin() { tlsOrigin = outer_; }

const CallOrigin* CallOrigin::current() noexcept { return tlsOrigin; }

}  // namespace lrpc::detail
