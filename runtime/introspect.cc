#include "runtime/introspect.h"

#include <dirent.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <thread>

#include "runtime/astack.h"
#include "runtime/base/log.h"
#include "runtime/names.h"
#include "runtime/protocol.h"
#include "runtime/shm.h"

namespace lrpc {

namespace {

// One page: the built-in ping A-stack is a call block and a return block (next line), nothing else.
constexpr size_t kPingRegionBytes = 4096;
constexpr std::string_view kSockSuffix = ".sock";

template <size_t N>
void copyText(char (&out)[N], std::string_view text) {
  size_t n = std::min(text.size(), N - 1);
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

// Connects to `name` as a query and reads the Welcome; returns the socket.
Result<OwnedFd> connectQuery(std::string_view name, const QueryOptions& options, ServerInfo* info) {
  ucred cred{};
  Result<OwnedFd> connected = detail::connectName(name, options.dir, options.trustUids, &cred);
  if (!connected.isOk()) return connected.status();
  OwnedFd sock = std::move(*connected);
  info->name = std::string(name);
  info->pid = cred.pid;
  info->uid = cred.uid;
  detail::Hello hello{};
  hello.magic = detail::kQueryMagic;
  hello.version = kVersion;
  copyText(hello.interfaceName, "lrpc query");
  Status sent = detail::sendMessage(sock.get(), &hello, sizeof hello);
  detail::Welcome welcome{};
  Status s = detail::recvMessage(sock.get(), &welcome, sizeof welcome, nullptr, static_cast<int>(options.timeout.count()));
  if (!s.isOk()) {
    if (!sent.isOk()) return sent;
    if (s.code() == Errc::kPeerDied) return Status(Errc::kPeerDied, "the server of \"" + std::string(name) + "\" hung up");
    if (s.code() == Errc::kDeadlineExceeded) {
      return Status(Errc::kDeadlineExceeded, "the server of \"" + std::string(name) + "\" did not answer (pid " +
                                                 std::to_string(cred.pid) + ")");
    }
    return s;
  }
  if (welcome.status != 0) {
    welcome.detail[sizeof welcome.detail - 1] = '\0';
    return Status(errcFromWire(welcome.status), detail::wireDetail(welcome.detail, std::strlen(welcome.detail)));
  }
  return sock;
}

Status askInfo(int sock, const QueryOptions& options, ServerInfo* info) {
  detail::QueryRequest req{};
  req.type = detail::QueryType::kInfo;
  if (Status s = detail::sendMessage(sock, &req, sizeof req); !s.isOk()) return s;
  detail::QueryInfo q{};
  if (Status s = detail::recvMessage(sock, &q, sizeof q, nullptr, static_cast<int>(options.timeout.count())); !s.isOk()) {
    return s;
  }
  if (q.status != 0) return Status(Errc::kBadFrame, "the server refused the info query");
  q.interfaceName[sizeof q.interfaceName - 1] = '\0';
  info->interfaceName = q.interfaceName;
  info->interfaceId = q.interfaceId;
  info->signatureHash = q.signatureHash;
  info->procedureCount = q.procedureCount;
  info->nameBindings = q.nameBindings;
  info->stats.bindingsLive = q.bindingsLive;
  info->stats.bindingsTotal = q.bindingsTotal;
  info->stats.bindingsRejected = q.bindingsRejected;
  info->stats.serverThreads = q.serverThreads;
  info->stats.callsServed = q.callsServed;
  info->stats.callErrors = q.callErrors;
  return {};
}

}  // namespace

Result<std::vector<std::string>> listNames(const QueryOptions& options) {
  Result<std::string> dir = detail::namesDir(options.dir, false, options.trustUids);
  if (!dir.isOk()) {
    if (dir.status().code() == Errc::kNotFound) return std::vector<std::string>{};  // nothing exported yet
    return dir.status();
  }
  DIR* d = ::opendir(dir->c_str());
  if (d == nullptr) return Status::fromErrno(errno, "opendir " + *dir);
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string_view file(e->d_name);
    if (file.size() <= kSockSuffix.size() || !file.ends_with(kSockSuffix)) continue;
    std::string_view name = file.substr(0, file.size() - kSockSuffix.size());
    if (detail::checkName(name).isOk()) names.emplace_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

Result<ServerInfo> queryServer(std::string_view name, const QueryOptions& options, ServerInfo* partial) {
  ServerInfo info;
  Result<OwnedFd> sock = connectQuery(name, options, &info);
  if (partial != nullptr) *partial = info;
  if (!sock.isOk()) return sock.status();
  if (Status s = askInfo(sock->get(), options, &info); !s.isOk()) return s;
  return info;
}

// ---- ping, client side ----

struct Pinger::Impl {
  ServerInfo info;
  OwnedFd sock;  // the query connection: the ping thread's lifetime and our liveness channel
  std::optional<SharedMemory> region;
  TransferMode mode = TransferMode::kAdaptive;
  uint32_t seq = 0;

  AStackControl* control() const { return reinterpret_cast<AStackControl*>(region->data()); }
  ReturnControl* returnControl() const { return reinterpret_cast<ReturnControl*>(region->data() + kCacheLine); }
};

Pinger::Pinger(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
Pinger::~Pinger() = default;

const ServerInfo& Pinger::info() const noexcept { return impl_->info; }

Result<std::unique_ptr<Pinger>> Pinger::open(std::string_view name, TransferMode mode, const QueryOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->mode = mode;
  Result<OwnedFd> sock = connectQuery(name, options, &impl->info);
  if (!sock.isOk()) return sock.status();
  impl->sock = std::move(*sock);
  if (Status s = askInfo(impl->sock.get(), options, &impl->info); !s.isOk()) return s;

  detail::QueryRequest req{};
  req.type = detail::QueryType::kPing;
  req.mode = static_cast<uint8_t>(mode);
  if (Status s = detail::sendMessage(impl->sock.get(), &req, sizeof req); !s.isOk()) return s;
  detail::QueryPingReply reply{};
  OwnedFd fd;
  if (Status s = detail::recvMessage(impl->sock.get(), &reply, sizeof reply, &fd, static_cast<int>(options.timeout.count()));
      !s.isOk()) {
    return s;
  }
  if (reply.status != 0) {
    return Status(errcFromWire(reply.status), "the server refused the ping A-stack");
  }
  if (reply.bytes != kPingRegionBytes || !fd.valid()) return Status(Errc::kBadFrame, "ping A-stack of an unexpected size");
  Result<SharedMemory> region = SharedMemory::adopt(std::move(fd), reply.bytes);
  if (!region.isOk()) return region.status();
  impl->region.emplace(std::move(*region));
  return std::unique_ptr<Pinger>(new Pinger(std::move(impl)));
}

Result<std::chrono::nanoseconds> Pinger::ping(std::chrono::nanoseconds timeout) {
  Impl& p = *impl_;
  ++p.seq;
  if (p.seq == 0) p.seq = 1;  // 0 is the doorbells' initial value
  AStackControl* ctl = p.control();
  int64_t start = detail::monotonicNs();
  ReturnControl* ret = p.returnControl();
  detail::ring(ctl->callWord, ctl->serverSleeping, p.seq);
  detail::WaitResult r =
      detail::waitForReturn(ret->returnWord, ret->clientSleeping, p.seq, p.mode, p.sock.get(), start + timeout.count());
  int64_t end = detail::monotonicNs();
  switch (r) {
    case detail::WaitResult::kReady: return std::chrono::nanoseconds(end - start);
    case detail::WaitResult::kTimedOut:
      return Status(Errc::kDeadlineExceeded, "no answer from \"" + p.info.name + "\" (pid " + std::to_string(p.info.pid) +
                                                 ") within the timeout");
    default:
      return Status(Errc::kPeerDied, "the server of \"" + p.info.name + "\" (pid " + std::to_string(p.info.pid) + ") died");
  }
}

// ---- the clerk's side ----

namespace detail {

namespace {

// The built-in ping A-stack and its server thread.
struct PingAStack {
  SharedMemory region;
  std::atomic<bool> stop{false};
  std::thread thread;

  explicit PingAStack(SharedMemory r) : region(std::move(r)) {}
  AStackControl* control() const { return reinterpret_cast<AStackControl*>(region.data()); }
  ReturnControl* returnControl() const { return reinterpret_cast<ReturnControl*>(region.data() + kCacheLine); }

  void serve(TransferMode mode) {
    AStackControl* ctl = control();
    ReturnControl* ret = returnControl();
    uint32_t last = 0;
    for (;;) {
      uint32_t seq = 0;
      if (waitForCall(ctl->callWord, ctl->serverSleeping, last, mode, stop, &seq) != WaitResult::kReady) return;
      last = seq;
      ring(ret->returnWord, ret->clientSleeping, seq);
    }
  }

  ~PingAStack() {
    if (!thread.joinable()) return;
    stop.store(true, std::memory_order_release);  // pairs with the acquire in waitForCall
    stopWaiter(control()->callWord);
    thread.join();
  }
};

bool answerInfo(int sock, const QueryTarget& target) {
  QueryInfo q{};
  q.procedureCount = target.iface->procedureCount;
  q.interfaceId = target.iface->id;
  q.signatureHash = target.iface->signatureHash;
  copyText(q.interfaceName, target.iface->name != nullptr ? target.iface->name : "?");
  q.nameBindings = target.nameBindings();
  ExporterStats st = target.stats();
  q.bindingsLive = st.bindingsLive;
  q.bindingsTotal = st.bindingsTotal;
  q.bindingsRejected = st.bindingsRejected;
  q.serverThreads = st.serverThreads;
  q.callsServed = st.callsServed;
  q.callErrors = st.callErrors;
  return sendMessage(sock, &q, sizeof q).isOk();
}

}  // namespace

void serveQueries(int sock, int stopFd, const QueryTarget& target) noexcept {
  Welcome w{};
  if (!sendMessage(sock, &w, sizeof w).isOk()) return;
  std::unique_ptr<PingAStack> ping;
  for (;;) {
    pollfd p[2] = {{sock, POLLIN | POLLRDHUP, 0}, {stopFd, POLLIN, 0}};
    int r = ::poll(p, 2, -1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 || p[1].revents != 0) break;
    if ((p[0].revents & (POLLHUP | POLLERR | POLLRDHUP | POLLNVAL)) != 0) break;
    if ((p[0].revents & POLLIN) == 0) continue;
    QueryRequest req{};
    OwnedFd fd;
    if (!recvMessage(sock, &req, sizeof req, &fd, -1).isOk() || fd.valid()) break;
    if (req.type == QueryType::kInfo) {
      if (!answerInfo(sock, target)) break;
      continue;
    }
    if (req.type != QueryType::kPing || ping || req.mode > static_cast<uint8_t>(TransferMode::kBlock)) break;
    QueryPingReply reply{};
    Result<SharedMemory> shm = SharedMemory::create("lrpc-ping", kPingRegionBytes);
    if (!shm.isOk()) {
      logf(LogTopic::kErrors, "ping A-stack: %s", shm.status().toString().c_str());
      reply.status = static_cast<uint8_t>(shm.status().code());
      if (!sendMessage(sock, &reply, sizeof reply).isOk()) break;
      continue;
    }
    try {
      ping = std::make_unique<PingAStack>(std::move(*shm));
      new (ping->control()) AStackControl{};
      new (ping->returnControl()) ReturnControl{};
      TransferMode mode = static_cast<TransferMode>(req.mode);
      PingAStack* raw = ping.get();
      ping->thread = std::thread([raw, mode] { raw->serve(mode); });
    } catch (const std::exception& e) {  // no memory or no thread: say so, keep the query open
      logf(LogTopic::kErrors, "ping A-stack: %s", e.what());
      ping.reset();
      reply.status = static_cast<uint8_t>(Errc::kResourceExhausted);
      if (!sendMessage(sock, &reply, sizeof reply).isOk()) break;
      continue;
    }
    reply.bytes = ping->region.size();
    if (!sendMessage(sock, &reply, sizeof reply, ping->region.fd()).isOk()) break;
  }
  // `ping` stops and joins its thread here, before the connection (and its socket) goes.
}

}  // namespace detail
}  // namespace lrpc
