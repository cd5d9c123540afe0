// The acceptor of one exported name: takes connections on the name's socket, refuses uids
// that may not import and connections beyond maxBindings before they cost a clerk, and hands
// each accepted one to a clerk thread of its own.
#include "runtime/exporter_parts.h"
#include "runtime/cap_table.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace lrpc {

using namespace exporter;  // NOLINT: this file implements the exporter's parts

void Export::reap(bool all) {
  std::list<std::unique_ptr<Connection>> done;
  {
    MutexLock lock(connMu);
    for (auto it = conns.begin(); it != conns.end();) {
      if (all || (*it)->finished.load(std::memory_order_acquire)) {
        done.push_back(std::move(*it));
        it = conns.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& c : done) c->clerk.join();
}

void Export::accept() {
  bool backoff = false;
  for (;;) {
    // While backing off, the listening socket is left out of the poll (a negative fd is
    // ignored) and the wait is bounded: stop and reap are still answered meanwhile.
    pollfd p[3] = {{backoff ? -1 : listen.get(), POLLIN, 0}, {stopFd.get(), POLLIN, 0}, {reapFd.get(), POLLIN, 0}};
    int r = ::poll(p, 3, backoff ? kAcceptBackoffMs : -1);
    backoff = false;
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 || p[1].revents != 0) break;
    if (p[2].revents != 0) {
      uint64_t n;
      ssize_t got = ::read(reapFd.get(), &n, sizeof n);
      (void)got;
      reap(false);
    }
    if ((p[0].revents & POLLIN) == 0) continue;
    OwnedFd sock(::accept4(listen.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!sock.valid()) {
      // Out of descriptors or memory: the connection stays queued and the socket readable, so
      // an immediate retry would spin on a core; wait for the process to free some first. A
      // client that gave up (ECONNABORTED, ...) is simply passed over.
      backoff = errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM;
      continue;
    }
    // The uid is checked here, before the connection holds a binding slot: with allowUids set the
    // socket is connectable by every uid, and one that may not import must not be able to fill
    // maxBindings by connecting and never saying Hello.
    ucred cred{};
    socklen_t credLen = sizeof cred;
    if (::getsockopt(sock.get(), SOL_SOCKET, SO_PEERCRED, &cred, &credLen) != 0) continue;
    if (!uidAllowed(owner->options, cred.uid)) {
      owner->bindingsRejected.fetch_add(1);
      detail::Hello hello{};
      (void)detail::recvMessage(sock.get(), &hello, sizeof hello, nullptr, kRefuseUidReadMs);
      detail::Welcome w{};
      w.status = static_cast<uint8_t>(Errc::kPermissionDenied);
      std::snprintf(w.detail, sizeof w.detail, "uid %u may not import \"%s\"", static_cast<unsigned>(cred.uid),
                    name.c_str());
      (void)detail::sendMessage(sock.get(), &w, sizeof w);
      continue;
    }
    size_t live;
    {
      MutexLock lock(connMu);
      live = conns.size();
    }
    if (live >= owner->options.maxBindings) {
      owner->bindingsRejected.fetch_add(1);
      // Read the Hello first (waiting briefly): closing with it unread would reset the socket
      // and the client would see "peer died" instead of the reason.
      detail::Hello hello{};
      (void)detail::recvMessage(sock.get(), &hello, sizeof hello, nullptr, kRefuseReadMs);
      detail::Welcome w{};
      w.status = static_cast<uint8_t>(Errc::kResourceExhausted);
      std::snprintf(w.detail, sizeof w.detail, "\"%s\" has too many bindings", name.c_str());
      (void)detail::sendMessage(sock.get(), &w, sizeof w);
      continue;
    }
    auto conn = std::make_unique<Connection>();
    conn->exp = this;
    conn->sock = std::move(sock);
    conn->caps = std::make_unique<CapTable>(owner->options.maxCapabilities);
    Connection* c = conn.get();
    MutexLock lock(connMu);
    conns.push_back(std::move(conn));
    c->clerk = std::thread([c] { c->run(); });
  }
  reap(true);
}

}  // namespace lrpc
