#include "bench/floors.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "runtime/transfer.h"

namespace lrpc::bench {

namespace {

enum Op : uint32_t { kOpNull = 0, kOpAdd = 1, kOpBigIn = 2, kOpBigInOut = 3, kOpEcho = 4, kOpSink = 5 };

inline void cpuRelax() { __builtin_ia32_pause(); }

// About lrpc's adaptive spin budget (kAdaptiveSpins), so that an idle floor parks when lrpc's
// server would.
constexpr uint32_t kFloorParkSpins = 1024;

void futexWait(std::atomic<uint32_t>* word, uint32_t expected) {
  timespec timeout{1, 0};  // wake up now and then to notice a dead peer
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &timeout, nullptr, 0);
}

void futexWake(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

// Whether the process has exited (without reaping it).
bool hasExited(pid_t pid) {
  siginfo_t info{};
  return waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid;
}

}  // namespace

// One direction of the handoff: the sequence word, then the call's bytes, in the same lines.
struct alignas(64) ShmSlot {
  std::atomic<uint32_t> seq;
  uint32_t op;
  int32_t a;
  int32_t b;
  Blob200 data;
};

// The curves' messages (up to ShmFloor::kMaxBytes) travel in two buffers after the slots;
// their length is in the slots' `a`.
struct ShmPingPong {
  ShmSlot request;
  ShmSlot reply;
  // The spinning server's "asleep" flag, in a line of its own: an idle floor sleeps after
  // kFloorParkSpins, as lrpc's adaptive server does, so that a paired benchmark's other
  // server has CPU 1 to itself. A tight loop never gets there.
  alignas(64) std::atomic<uint32_t> parked;
  alignas(64) unsigned char requestBytes[ShmFloor::kMaxBytes];
  alignas(64) unsigned char replyBytes[ShmFloor::kMaxBytes];
};

ShmFloor::ShmFloor(WaitMode mode, SharedMemory region, std::unique_ptr<ServerProcess> server)
    : mode_(mode),
      region_(std::move(region)),
      server_(std::move(server)),
      shm_(reinterpret_cast<ShmPingPong*>(region_.data())) {}

ShmFloor::~ShmFloor() { server_.reset(); }

Result<std::unique_ptr<ShmFloor>> ShmFloor::start(WaitMode mode, int serverCpu) {
  Result<SharedMemory> region = createShared(sizeof(ShmPingPong));
  if (!region) return region.status();
  new (region->data()) ShmPingPong{};
  ServerSpec spec;
  spec.kind = "floor_shm";
  spec.args = {std::to_string(region->fd()), mode == WaitMode::kSpin ? "spin" : "block"};
  spec.passFds = {region->fd()};
  spec.cpu = serverCpu;
  Result<std::unique_ptr<ServerProcess>> server = ServerProcess::start(spec);
  if (!server) return server.status();
  return std::unique_ptr<ShmFloor>(new ShmFloor(mode, std::move(region.value()), std::move(server.value())));
}

bool ShmFloor::roundTrip(uint32_t op) {
  ShmSlot& req = shm_->request;
  ShmSlot& rep = shm_->reply;
  req.op = op;
  lrpc::detail::timeline(lrpc::detail::Mark::kFloorClientRing, seq_ + 1);
  req.seq.store(++seq_, std::memory_order_release);
  if (mode_ == WaitMode::kSpin) {
    uint32_t spins = 0;
    while (rep.seq.load(std::memory_order_acquire) != seq_) {
      cpuRelax();
      // Not reached in a tight loop (a reply comes within a few pauses); the first call
      // after an idle stretch finds the server asleep and wakes it, again until it is up.
      if ((++spins & 63) == 0 && shm_->parked.load(std::memory_order_relaxed) != 0) futexWake(&req.seq);
      if (spins == (1u << 24)) {
        spins = 0;
        if (hasExited(server_->pid())) return false;
      }
    }
    lrpc::detail::timeline(lrpc::detail::Mark::kFloorClientReturn, seq_);
  } else {
    futexWake(&req.seq);
    uint32_t v;
    while ((v = rep.seq.load(std::memory_order_acquire)) != seq_) {
      futexWait(&rep.seq, v);
      if (rep.seq.load(std::memory_order_acquire) != seq_ && hasExited(server_->pid())) return false;
    }
  }
  return true;
}

bool ShmFloor::null() { return roundTrip(kOpNull); }

bool ShmFloor::add(int32_t a, int32_t b, int32_t* sum) {
  shm_->request.a = a;
  shm_->request.b = b;
  if (!roundTrip(kOpAdd)) return false;
  *sum = shm_->reply.a;
  return true;
}

bool ShmFloor::bigIn(const Blob200& in) {
  std::memcpy(&shm_->request.data, &in, sizeof in);
  return roundTrip(kOpBigIn);
}

bool ShmFloor::bigInOut(const Blob200& in, Blob200* out) {
  std::memcpy(&shm_->request.data, &in, sizeof in);
  if (!roundTrip(kOpBigInOut)) return false;
  std::memcpy(out, &shm_->reply.data, sizeof *out);
  return true;
}

bool ShmFloor::echo(std::span<const uint8_t> in, std::vector<uint8_t>* out) {
  if (in.size() > kMaxBytes) return false;
  if (!in.empty()) std::memcpy(shm_->requestBytes, in.data(), in.size());
  shm_->request.a = static_cast<int32_t>(in.size());
  if (!roundTrip(kOpEcho)) return false;
  size_t n = static_cast<size_t>(shm_->reply.a);
  if (n > kMaxBytes) return false;
  out->assign(shm_->replyBytes, shm_->replyBytes + n);
  return true;
}

bool ShmFloor::sink(std::span<const uint8_t> in) {
  if (in.size() > kMaxBytes) return false;
  if (!in.empty()) std::memcpy(shm_->requestBytes, in.data(), in.size());
  shm_->request.a = static_cast<int32_t>(in.size());
  return roundTrip(kOpSink);
}

int serveShmFloor(int readyFd, int argc, char** argv) {
  if (argc < 2) return 2;
  bool spin = std::string(argv[1]) == "spin";
  Result<SharedMemory> region = adoptShared(std::atoi(argv[0]), sizeof(ShmPingPong));
  if (!region) return 3;
  auto* shm = reinterpret_cast<ShmPingPong*>(region->data());
  ShmSlot& req = shm->request;
  ShmSlot& rep = shm->reply;
  signalReady(readyFd);
  uint32_t last = 0;
  Blob200 mine;
  std::vector<unsigned char> mineBytes(ShmFloor::kMaxBytes);
  for (;;) {
    uint32_t seq;
    if (spin) {
      uint32_t idle = 0;
      while ((seq = req.seq.load(std::memory_order_acquire)) == last) {
        cpuRelax();
        if (++idle == kFloorParkSpins) {
          idle = 0;
          // Seq_cst store, then the futex re-reads seq: a client that stored its call
          // before the flag was visible is seen there; one after sees the flag and wakes us.
          shm->parked.store(1, std::memory_order_seq_cst);
          futexWait(&req.seq, last);
          shm->parked.store(0, std::memory_order_relaxed);
        }
      }
    } else {
      while ((seq = req.seq.load(std::memory_order_acquire)) == last) futexWait(&req.seq, last);
    }
    last = seq;
    lrpc::detail::timeline(lrpc::detail::Mark::kFloorServerCall, seq);
    switch (req.op) {
      case kOpAdd:
        rep.a = req.a + req.b;
        break;
      case kOpBigIn:
        std::memcpy(&mine, &req.data, sizeof mine);
        benchmark::DoNotOptimize(mine);
        break;
      case kOpBigInOut:
        std::memcpy(&mine, &req.data, sizeof mine);
        mine.w[0] += 1;
        std::memcpy(&rep.data, &mine, sizeof mine);
        break;
      case kOpEcho:
      case kOpSink: {
        size_t n = std::min(static_cast<size_t>(static_cast<uint32_t>(req.a)), ShmFloor::kMaxBytes);
        std::memcpy(mineBytes.data(), shm->requestBytes, n);  // the server's own copy
        benchmark::DoNotOptimize(mineBytes.data());
        if (req.op == kOpEcho) {
          std::memcpy(shm->replyBytes, mineBytes.data(), n);
          rep.a = static_cast<int32_t>(n);
        }
        break;
      }
      default:
        break;
    }
    lrpc::detail::timeline(lrpc::detail::Mark::kFloorServerReturn, seq);
    rep.seq.store(seq, std::memory_order_release);
    if (!spin) futexWake(&rep.seq);
  }
}

// ---------------------------------------------------------------------------------------
// UDP ping-pong. A datagram is a 4-byte op followed by the call's bytes (none, two int32
// or 200 bytes); the reply is the op followed by the result's bytes.

namespace {

constexpr uint16_t kUdpFloorPort = 7301;

// A curve message travels as datagrams of [op u32 | total length u32 | offset u32 | chunk],
// each at most one Ethernet payload (1500 - 20 - 8 bytes).
constexpr size_t kChunkHeader = 12;
constexpr size_t kChunkBytes = 1472 - kChunkHeader;

struct ChunkHeader {
  uint32_t op, total, offset;
};

// Sends `data` as chunks to the connected peer (to == nullptr) or to `to`.
bool sendAsChunks(int fd, uint32_t op, std::span<const uint8_t> data, const sockaddr_in* to) {
  unsigned char buf[kChunkHeader + kChunkBytes];
  size_t off = 0;
  do {
    size_t n = std::min(kChunkBytes, data.size() - off);
    ChunkHeader h{op, static_cast<uint32_t>(data.size()), static_cast<uint32_t>(off)};
    std::memcpy(buf, &h, kChunkHeader);
    if (n > 0) std::memcpy(buf + kChunkHeader, data.data() + off, n);
    ssize_t r = to ? sendto(fd, buf, kChunkHeader + n, 0, reinterpret_cast<const sockaddr*>(to), sizeof *to)
                   : send(fd, buf, kChunkHeader + n, 0);
    if (r != static_cast<ssize_t>(kChunkHeader + n)) return false;
    off += n;
  } while (off < data.size());
  return true;
}

Status setNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) return Status::fromErrno(errno, "O_NONBLOCK");
  return {};
}

}  // namespace

Result<std::unique_ptr<UdpFloor>> UdpFloor::start(WaitMode mode, const NetnsPair& pair) {
  return launch(pair, mode == WaitMode::kSpin ? "busy" : "block", mode);
}

Result<std::unique_ptr<UdpFloor>> UdpFloor::startPipelined(const NetnsPair& pair) {
  return launch(pair, "pipelined", WaitMode::kSpin);
}

Result<std::unique_ptr<UdpFloor>> UdpFloor::launch(const NetnsPair& pair, const char* serverMode, WaitMode mode) {
  ServerSpec spec;
  spec.kind = "floor_udp";
  spec.args = {pair.ipA(), std::to_string(kUdpFloorPort), serverMode};
  spec.netns = pair.nsPath(true);
  Result<std::unique_ptr<ServerProcess>> server = ServerProcess::start(spec);
  if (!server) return server.status();

  Result<OwnedFd> connected = connectToServer(pair, SOCK_DGRAM, kUdpFloorPort);
  if (!connected) return connected.status();
  OwnedFd sock = std::move(*connected);
  if (mode == WaitMode::kSpin) {
    if (Status s = setNonBlocking(sock.get()); !s) return s;
  } else {
    timeval tv{2, 0};
    setsockopt(sock.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  return std::unique_ptr<UdpFloor>(new UdpFloor(mode, std::move(server.value()), std::move(sock)));
}

bool UdpFloor::nullPipelined(benchmark::State& state, size_t inFlight) {
  constexpr size_t kBatch = 64;
  const uint32_t op = kOpNull;
  mmsghdr out[kBatch] = {};
  iovec outIov[kBatch];
  for (size_t i = 0; i < kBatch; ++i) {
    outIov[i] = {const_cast<uint32_t*>(&op), sizeof op};
    out[i].msg_hdr.msg_iov = &outIov[i];
    out[i].msg_hdr.msg_iovlen = 1;
  }
  alignas(64) unsigned char inBuf[kBatch][64];
  mmsghdr in[kBatch] = {};
  iovec inIov[kBatch];
  for (size_t i = 0; i < kBatch; ++i) {
    inIov[i] = {inBuf[i], sizeof inBuf[i]};
    in[i].msg_hdr.msg_iov = &inIov[i];
    in[i].msg_hdr.msg_iovlen = 1;
  }
  const int fd = socket_.get();
  auto sendN = [&](size_t n) {
    while (n > 0) {
      int r = sendmmsg(fd, out, static_cast<unsigned>(std::min(n, kBatch)), 0);
      if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (r <= 0) return false;
      n -= static_cast<size_t>(r);
    }
    return true;
  };
  size_t ready = 0;        // replies received and not yet counted as an iteration
  size_t outstanding = 0;  // requests sent, replies not yet received
  auto receive = [&] {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    for (uint32_t spins = 0;;) {
      int r = recvmmsg(fd, in, kBatch, MSG_DONTWAIT, nullptr);
      if (r > 0) {
        for (int i = 0; i < r; ++i) {
          uint32_t got;  // the reply's bytes, copied out as any call's result is
          if (in[i].msg_len != sizeof got) return false;
          std::memcpy(&got, inBuf[i], sizeof got);
          if (got != op) return false;
        }
        ready += static_cast<size_t>(r);
        outstanding -= static_cast<size_t>(r);
        return true;
      }
      if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
      if (++spins == (1u << 16)) {
        spins = 0;
        if (std::chrono::steady_clock::now() > deadline || hasExited(server_->pid())) return false;
      }
    }
  };
  if (!sendN(inFlight)) return false;
  outstanding = inFlight;
  size_t toSend = 0;  // one new request per reply taken, sent as a batch when replies run out
  for (auto _ : state) {
    if (ready == 0) {
      if (!sendN(toSend)) return false;
      outstanding += toSend;
      toSend = 0;
      if (!receive()) return false;
    }
    --ready;
    ++toSend;
  }
  while (outstanding > 0) {
    if (!receive()) return false;
  }
  return true;
}

long UdpFloor::roundTrip(size_t len) {
  if (send(socket_.get(), buf_, len, 0) != static_cast<ssize_t>(len)) return -1;
  return receive();
}

long UdpFloor::receive() {
  if (mode_ == WaitMode::kBlock) {  // SO_RCVTIMEO bounds the wait
    ssize_t n;
    do n = recv(socket_.get(), buf_, sizeof buf_, 0);
    while (n < 0 && errno == EINTR);
    return n;
  }
  uint32_t spins = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (;;) {
    ssize_t n = recv(socket_.get(), buf_, sizeof buf_, MSG_DONTWAIT);
    if (n >= 0) return n;
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return -1;
    if (++spins == (1u << 16)) {
      spins = 0;
      if (std::chrono::steady_clock::now() > deadline || hasExited(server_->pid())) return -1;
    }
  }
}

bool UdpFloor::sendChunks(uint32_t op, std::span<const uint8_t> data) {
  return data.size() <= ShmFloor::kMaxBytes && sendAsChunks(socket_.get(), op, data, nullptr);
}

bool UdpFloor::echo(std::span<const uint8_t> in, std::vector<uint8_t>* out) {
  if (!sendChunks(kOpEcho, in)) return false;
  out->resize(in.size());
  size_t got = 0;
  ChunkHeader h;
  do {
    long n = receive();
    if (n < static_cast<long>(kChunkHeader)) return false;
    std::memcpy(&h, buf_, kChunkHeader);
    size_t chunk = static_cast<size_t>(n) - kChunkHeader;
    if (h.op != kOpEcho || h.total != in.size() || h.offset > in.size() || chunk > in.size() - h.offset) return false;
    if (chunk > 0) std::memcpy(out->data() + h.offset, buf_ + kChunkHeader, chunk);
    got += chunk;
  } while (got < h.total);
  return true;
}

bool UdpFloor::sink(std::span<const uint8_t> in) {
  if (!sendChunks(kOpSink, in)) return false;
  return receive() == 4;
}

bool UdpFloor::null() {
  uint32_t op = kOpNull;
  std::memcpy(buf_, &op, 4);
  return roundTrip(4) == 4;
}

bool UdpFloor::add(int32_t a, int32_t b, int32_t* sum) {
  uint32_t op = kOpAdd;
  std::memcpy(buf_, &op, 4);
  std::memcpy(buf_ + 4, &a, 4);
  std::memcpy(buf_ + 8, &b, 4);
  if (roundTrip(12) != 8) return false;
  std::memcpy(sum, buf_ + 4, 4);
  return true;
}

bool UdpFloor::bigIn(const Blob200& in) {
  uint32_t op = kOpBigIn;
  std::memcpy(buf_, &op, 4);
  std::memcpy(buf_ + 4, &in, sizeof in);
  return roundTrip(4 + sizeof in) == 4;
}

bool UdpFloor::bigInOut(const Blob200& in, Blob200* out) {
  uint32_t op = kOpBigInOut;
  std::memcpy(buf_, &op, 4);
  std::memcpy(buf_ + 4, &in, sizeof in);
  if (roundTrip(4 + sizeof in) != 4 + static_cast<long>(sizeof in)) return false;
  std::memcpy(out, buf_ + 4, sizeof *out);
  return true;
}

namespace {
// floor_udp_pipelined's server: busy-polls, takes every waiting request in one recvmmsg and
// answers them all in one sendmmsg (a Null reply is the request's 4-byte op, copied out and
// back like the other floors' bytes).
int servePipelined(int sock) {
  constexpr unsigned kBatch = 64;
  alignas(64) unsigned char buf[kBatch][64];
  sockaddr_in from[kBatch];
  mmsghdr in[kBatch] = {}, out[kBatch] = {};
  iovec inIov[kBatch], outIov[kBatch];
  uint32_t ops[kBatch];
  for (unsigned i = 0; i < kBatch; ++i) {
    inIov[i] = {buf[i], sizeof buf[i]};
    in[i].msg_hdr.msg_iov = &inIov[i];
    in[i].msg_hdr.msg_iovlen = 1;
    outIov[i] = {&ops[i], sizeof ops[i]};
    out[i].msg_hdr.msg_iov = &outIov[i];
    out[i].msg_hdr.msg_iovlen = 1;
  }
  for (;;) {
    for (unsigned i = 0; i < kBatch; ++i) {
      in[i].msg_hdr.msg_name = &from[i];
      in[i].msg_hdr.msg_namelen = sizeof from[i];
    }
    int r = recvmmsg(sock, in, kBatch, MSG_DONTWAIT, nullptr);
    if (r <= 0) continue;
    unsigned n = 0;
    for (int i = 0; i < r; ++i) {
      if (in[i].msg_len < sizeof ops[0]) continue;
      std::memcpy(&ops[n], buf[i], sizeof ops[n]);
      out[n].msg_hdr.msg_name = &from[i];
      out[n].msg_hdr.msg_namelen = in[i].msg_hdr.msg_namelen;
      outIov[n] = {&ops[n], sizeof ops[n]};
      ++n;
    }
    for (unsigned done = 0; done < n;) {
      int s = sendmmsg(sock, out + done, n - done, 0);
      if (s <= 0) break;  // a full socket buffer drops the rest, as the network would
      done += static_cast<unsigned>(s);
    }
  }
}
}  // namespace

int serveUdpFloor(int readyFd, int argc, char** argv) {
  if (argc < 3) return 2;
  const bool pipelined = std::string(argv[2]) == "pipelined";
  bool busy = pipelined || std::string(argv[2]) == "busy";
  OwnedFd sock(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!sock.valid()) return 3;
  int one = 1;
  setsockopt(sock.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr = inetAddr(argv[0], static_cast<uint16_t>(std::atoi(argv[1])));
  if (bind(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return 4;
  if (busy && !setNonBlocking(sock.get())) return 5;
  signalReady(readyFd);
  if (pipelined) return servePipelined(sock.get());
  alignas(64) unsigned char buf[2048];
  Blob200 mine;
  std::vector<uint8_t> message(ShmFloor::kMaxBytes);  // a curve message being reassembled
  size_t got = 0;
  for (;;) {
    sockaddr_in from{};
    socklen_t fromLen = sizeof from;
    ssize_t n = recvfrom(sock.get(), buf, sizeof buf, busy ? MSG_DONTWAIT : 0, reinterpret_cast<sockaddr*>(&from), &fromLen);
    if (n < 4) continue;  // EAGAIN while busy-polling, or a runt
    uint32_t op;
    std::memcpy(&op, buf, 4);
    size_t replyLen = 4;
    if ((op == kOpEcho || op == kOpSink) && n >= static_cast<ssize_t>(kChunkHeader)) {
      ChunkHeader h;
      std::memcpy(&h, buf, kChunkHeader);
      size_t chunk = static_cast<size_t>(n) - kChunkHeader;
      if (h.total > message.size() || h.offset > h.total || chunk > h.total - h.offset) continue;
      if (chunk > 0) std::memcpy(message.data() + h.offset, buf + kChunkHeader, chunk);
      got += chunk;
      if (got < h.total) continue;
      got = 0;
      benchmark::DoNotOptimize(message.data());
      if (op == kOpEcho) {
        sendAsChunks(sock.get(), kOpEcho, std::span<const uint8_t>(message.data(), h.total), &from);
        continue;
      }
      // sink: the 4-byte op acknowledges the whole message
    } else if (op == kOpAdd && n >= 12) {
      int32_t a, b;
      std::memcpy(&a, buf + 4, 4);
      std::memcpy(&b, buf + 8, 4);
      int32_t sum = a + b;
      std::memcpy(buf + 4, &sum, 4);
      replyLen = 8;
    } else if ((op == kOpBigIn || op == kOpBigInOut) && n >= 204) {
      std::memcpy(&mine, buf + 4, sizeof mine);
      benchmark::DoNotOptimize(mine);
      if (op == kOpBigInOut) {
        mine.w[0] += 1;
        std::memcpy(buf + 4, &mine, sizeof mine);
        replyLen = 4 + sizeof mine;
      }
    }
    sendto(sock.get(), buf, replyLen, 0, reinterpret_cast<sockaddr*>(&from), fromLen);
  }
}

}  // namespace lrpc::bench
