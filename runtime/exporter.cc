#include "runtime/exporter.h"

#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "runtime/base/log.h"
#include "runtime/exporter_parts.h"
#include "runtime/names.h"

namespace lrpc {

namespace exporter {

bool uidAllowed(const ExporterOptions& opts, uid_t uid) {
  return uid == ::geteuid() || std::find(opts.allowUids.begin(), opts.allowUids.end(), uid) != opts.allowUids.end();
}

uint64_t segmentSize(uint64_t n) {
  uint64_t s = kMinSegmentBytes;
  while (s < n) s <<= 1;
  return s;
}

void signal(int eventFd) {
  uint64_t one = 1;
  ssize_t r = ::write(eventFd, &one, sizeof one);
  (void)r;  // an eventfd write only fails at a counter overflow, which leaves it readable anyway
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016" PRIx64, v);
  return buf;
}

}  // namespace exporter

Exporter::Exporter(ExporterOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->self = this;
  impl_->options = std::move(options);
  impl_->dir = detail::namesDir(impl_->options.dir, true);
}

Exporter::~Exporter() {
  std::vector<std::unique_ptr<Export>> exports;
  {
    MutexLock lock(impl_->mu);
    exports.swap(impl_->exports);
  }
  for (auto& e : exports) exporter::signal(e->stopFd.get());
  for (auto& e : exports) {
    e->acceptor.join();
    // Remove the socket, then the lock file, while we still hold the lock: no successor's files
    // are removed, and lockName() notices a lock taken on the file we unlink.
    ::unlink(e->sockPath.c_str());
    ::unlink(detail::lockPath(*impl_->dir, e->name).c_str());
  }
}

const std::string& Exporter::dir() const noexcept {
  return impl_->dir.isOk() ? *impl_->dir : impl_->noDir;
}

Status Exporter::add(std::string_view name, const InterfaceDescriptor& iface, void* impl) {
  if (!impl_->dir.isOk()) return impl_->dir.status();
  if (Status s = detail::checkName(name); !s.isOk()) return s;
  if (iface.dispatch == nullptr || impl == nullptr) return Status(Errc::kInvalidArgument, "no dispatch or no server");
  Result<RegionLayout> layout = RegionLayout::compute(iface);
  if (!layout.isOk()) return layout.status();

  auto e = std::make_unique<Export>();
  e->owner = impl_.get();
  e->name = std::string(name);
  e->iface = &iface;
  e->impl = impl;
  e->layout.emplace(std::move(*layout));
  const std::string& dir = *impl_->dir;
  e->sockPath = detail::socketPath(dir, name);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (e->sockPath.size() >= sizeof addr.sun_path) return Status(Errc::kInvalidArgument, "socket path too long");
  std::memcpy(addr.sun_path, e->sockPath.c_str(), e->sockPath.size() + 1);

  Result<OwnedFd> lock = detail::lockName(dir, name);
  if (!lock.isOk()) return lock.status();
  e->nameLock = std::move(*lock);
  // We hold the name's lock, so any socket file left here belongs to a dead server.
  ::unlink(e->sockPath.c_str());
  e->listen.reset(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!e->listen.valid()) return Status::fromErrno(errno, "socket");
  if (::bind(e->listen.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return Status::fromErrno(errno, "bind " + e->sockPath);
  }
  ::chmod(e->sockPath.c_str(), impl_->options.allowUids.empty() ? 0600 : 0666);
  if (::listen(e->listen.get(), 128) != 0) return Status::fromErrno(errno, "listen");
  e->stopFd.reset(::eventfd(0, EFD_CLOEXEC));
  e->reapFd.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!e->stopFd.valid() || !e->reapFd.valid()) return Status::fromErrno(errno, "eventfd");
  Export* raw = e.get();
  raw->acceptor = std::thread([raw] { raw->accept(); });
  detail::logf(LogTopic::kBinding, "exporting %s as \"%s\" in %s", iface.name ? iface.name : "?", raw->name.c_str(),
               dir.c_str());
  MutexLock guard(impl_->mu);
  impl_->exports.push_back(std::move(e));
  return {};
}

ExporterStats Exporter::stats() const {
  ExporterStats st;
  st.bindingsLive = impl_->bindingsLive.load();
  st.bindingsTotal = impl_->bindingsTotal.load();
  st.bindingsRejected = impl_->bindingsRejected.load();
  MutexLock lock(impl_->mu);
  for (auto& e : impl_->exports) {
    MutexLock connLock(e->connMu);
    for (auto& c : e->conns) {
      MutexLock threadsLock(c->threadsMu);
      for (auto& slot : c->slots) {
        st.callsServed += slot->calls.load(std::memory_order_relaxed);
        st.callErrors += slot->errors.load(std::memory_order_relaxed);
      }
    }
  }
  // Read after the live counters: a thread joined meanwhile may be counted twice, never lost.
  st.serverThreads = impl_->serverThreads.load();
  st.callsServed += impl_->callsFinished.load();
  st.callErrors += impl_->errorsFinished.load();
  return st;
}

}  // namespace lrpc
