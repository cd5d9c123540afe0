#include "transport/uring_endpoint.h"

#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "runtime/base/log.h"
#include "transport/raw_syscalls.h"
#include "transport/wire.h"

namespace lrpc::net {

using Clock = std::chrono::steady_clock;

namespace {
constexpr unsigned kBufferGroup = 0;
constexpr uint64_t kRecvTag = 1;  // user_data of the multishot recvmsg

Status uringError(int negErrno, const char* what) { return Status::fromErrno(-negErrno, what); }
}  // namespace

Ring::~Ring() {
  if (live_) io_uring_queue_exit(&ring_);
}

int Ring::init(unsigned entries, unsigned cqEntries, unsigned flags) noexcept {
  io_uring_params p{};
  p.flags = flags;
  if (cqEntries != 0) {
    p.flags |= IORING_SETUP_CQSIZE;
    p.cq_entries = cqEntries;
  }
  int rc = io_uring_queue_init_params(entries, &ring_, &p);
  live_ = rc == 0;
  return rc;
}

Result<std::unique_ptr<Endpoint>> UringEndpoint::open(const EndpointOptions& options) {
  std::unique_ptr<UringEndpoint> ep(new UringEndpoint(options));
  if (Status s = ep->setUp(); !s.isOk()) return s;
  return std::unique_ptr<Endpoint>(std::move(ep));
}

UringEndpoint::~UringEndpoint() = default;

Status UringEndpoint::setUp() {
  buffers_ = 1;
  while (buffers_ < options_.receiveBuffers && buffers_ < 32768) buffers_ <<= 1;
  if (options_.gro) buffers_ = std::min(buffers_, kGroBuffers);
  // Every datagram completion holds a free-queue buffer, so a completion queue with room
  // for all of them (and then some) never overflows. An overflow would end the multishot
  // receive with its final completion parked in the kernel's overflow list.
  // A datagram reaches the completion queue through task work of the thread that armed the
  // receive. By default the kernel interrupts that thread (an IPI, a VM exit under a
  // hypervisor) to run it, microseconds per round trip under a hypervisor. With
  // cooperative task running it only raises IORING_SQ_TASKRUN, and the polling thread
  // enters the kernel when it sees the flag (receive() below); a sleeping armer is still woken.
  int rc = recvRing_.init(64, buffers_ * 2, IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG);
  if (rc == -EINVAL) rc = recvRing_.init(64, buffers_ * 2);  // kernel < 5.19
  if (rc < 0) {
    return Status(Errc::kUnsupported, std::string("io_uring_queue_init: ") + std::strerror(-rc));
  }
  {
    MutexLock lock(sendMu_);  // no sender exists yet; taken so the checker sees every use of sendRing_ under it
    rc = sendRing_.init(kSendBatch * 2);
  }
  if (rc < 0) {
    return Status(Errc::kUnsupported, std::string("io_uring_queue_init: ") + std::strerror(-rc));
  }
  // Probe the opcodes we use. SEND_ZC arrived in the same kernel (6.0) as multishot
  // recvmsg, which has no opcode of its own to probe, so it stands in for it.
  io_uring_probe* probe = io_uring_get_probe_ring(recvRing_.get());
  if (probe == nullptr) return Status(Errc::kUnsupported, "io_uring opcode probe failed");
  bool ok = io_uring_opcode_supported(probe, IORING_OP_SENDMSG) && io_uring_opcode_supported(probe, IORING_OP_RECVMSG) &&
            io_uring_opcode_supported(probe, IORING_OP_SEND_ZC);
  io_uring_free_probe(probe);
  if (!ok) return Status(Errc::kUnsupported, "io_uring lacks SENDMSG/RECVMSG or multishot receive (kernel < 6.0)");

  auto fd = openUdpSocket(options_);
  if (!fd) return fd.status();
  fd_ = std::move(*fd);
  local_ = boundAddress(fd_.get());
  // The kernel keeps SO_RCVTIMEO in jiffies and reports it back in microseconds: one jiffy
  // set and read back is the length of a jiffy (sleepRead rounds its timeouts to it).
  timeval tick{0, 1};
  socklen_t tickLen = sizeof tick;
  if (::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &tick, sizeof tick) == 0 &&
      ::getsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &tick, &tickLen) == 0 && tick.tv_sec == 0 && tick.tv_usec > 0) {
    jiffy_ = std::chrono::microseconds(tick.tv_usec);
  }
  timeval none{0, 0};
  if (::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none) != 0) {
    return Status::fromErrno(errno, "SO_RCVTIMEO");
  }

  // With UDP_GRO one completion carries up to 64 KiB of same-size datagrams: the bulk path
  // then costs the kernel one receive per run instead of one per fragment. Probed here, but
  // switched on only while large datagrams arrive (adaptGro).
  gro_ = options_.gro && enableGro(fd_.get(), true) && enableGro(fd_.get(), false);
  recvMsg_.msg_controllen = gro_ ? kGroControlBytes : 0;
  // Each buffer holds the recvmsg_out header, the source address, the control message and
  // the datagram (or run) plus one byte (so an oversized one arrives truncated and is
  // dropped).
  size_t room = gro_ ? kGroBufferBytes : options_.maxDatagram;
  bufferBytes_ = (sizeof(io_uring_recvmsg_out) + sizeof(sockaddr_in) + recvMsg_.msg_controllen + room + 1 + 63) &
                 ~size_t{63};
  Result<Mapping> segment = Mapping::anonymous(bufferBytes_ * buffers_);
  if (!segment.isOk()) return Status(segment.status().code(), "communication segment: " + segment.status().detail());
  segment_ = std::move(*segment);

  size_t ringBytes = (sizeof(io_uring_buf) * buffers_ + 4095) & ~size_t{4095};
  Result<Mapping> ringMem = Mapping::anonymous(ringBytes);
  if (!ringMem.isOk()) return Status(ringMem.status().code(), "buffer ring: " + ringMem.status().detail());
  bufRingMem_ = std::move(*ringMem);
  bufRing_ = reinterpret_cast<io_uring_buf_ring*>(bufRingMem_.data());
  io_uring_buf_ring_init(bufRing_);
  io_uring_buf_reg reg{};
  reg.ring_addr = reinterpret_cast<uint64_t>(bufRing_);
  reg.ring_entries = buffers_;
  reg.bgid = kBufferGroup;
  if (int r = io_uring_register_buf_ring(recvRing_.get(), &reg, 0); r < 0) {
    return Status(Errc::kUnsupported, std::string("io_uring_register_buf_ring: ") + std::strerror(-r));
  }
  unsigned mask = static_cast<unsigned>(io_uring_buf_ring_mask(buffers_));
  for (unsigned i = 0; i < buffers_; ++i) {
    io_uring_buf_ring_add(bufRing_, segment_.data() + size_t{i} * bufferBytes_, static_cast<unsigned>(bufferBytes_),
                          static_cast<unsigned short>(i), static_cast<int>(mask), static_cast<int>(i));
  }
  io_uring_buf_ring_advance(bufRing_, static_cast<int>(buffers_));
  recvMsg_.msg_namelen = sizeof(sockaddr_in);
  // Not armed here: the multishot receive is armed by the first receive() call. Its
  // completions are produced by task work on the thread that armed it, so that must be the
  // thread that polls (a server binds on one thread and polls on another; a thread that
  // armed and then sleeps elsewhere would have to be woken for every datagram).
  return {};
}

Status UringEndpoint::arm() noexcept {
  io_uring_sqe* sqe = io_uring_get_sqe(recvRing_.get());
  if (sqe == nullptr) return Status(Errc::kResourceExhausted, "receive ring full");
  io_uring_prep_recvmsg_multishot(sqe, fd_.get(), &recvMsg_, 0);
  sqe->flags |= IOSQE_BUFFER_SELECT;
  sqe->buf_group = kBufferGroup;
  io_uring_sqe_set_data64(sqe, kRecvTag);
  int rc = io_uring_submit(recvRing_.get());
  if (rc < 0) return uringError(rc, "io_uring_submit(recvmsg)");
  armed_ = true;
  return {};
}

namespace {
// Gathering copies the pieces once more, which pays for itself while they are small.
constexpr size_t kGatherBytes = 512;
}  // namespace

Status UringEndpoint::sendOne(const OutDatagram& d) noexcept {
  size_t bytes = 0;
  for (uint32_t i = 0; i < d.iovCount; ++i) bytes += d.iov[i].iov_len;
  sockaddr_in to{};
  if (!options_.connect) to = toSockaddr(d.to);
  const auto* toAddr = options_.connect ? nullptr : reinterpret_cast<const sockaddr*>(&to);
  const socklen_t toLen = options_.connect ? 0 : sizeof to;
  // A small datagram (every single-cell one, and up to kGatherBytes) is gathered into one
  // piece and leaves with sendto, which skips sendmsg's copies of the msghdr and its iovecs;
  // larger ones go with sendmsg straight from their pieces.
  alignas(64) std::byte gathered[kGatherBytes];
  const bool gather = bytes <= sizeof gathered;
  msghdr msg{};
  if (gather) {
    size_t at = 0;
    for (uint32_t i = 0; i < d.iovCount; ++i) {
      // An empty piece may have a null base, which memcpy may not be given even for 0 bytes.
      if (d.iov[i].iov_len != 0) std::memcpy(gathered + at, d.iov[i].iov_base, d.iov[i].iov_len);
      at += d.iov[i].iov_len;
    }
  } else {
    msg.msg_name = const_cast<sockaddr*>(toAddr);
    msg.msg_namelen = toLen;
    msg.msg_iov = const_cast<iovec*>(d.iov);
    msg.msg_iovlen = d.iovCount;
  }
  for (;;) {
    ssize_t rc = gather ? sys::sendto(fd_.get(), gathered, bytes, 0, toAddr, toLen) : sys::sendmsg(fd_.get(), &msg, 0);
    if (rc >= 0) return {};
    if (errno == EINTR) continue;
    if (errno == ECONNREFUSED) return Status(Errc::kPeerDied, "peer port unreachable");
    // Other failures (full queue, unreachable, a firewall's drop) lose the datagram, as a
    // network would; the protocol above resends.
    return {};
  }
}

Status UringEndpoint::send(std::span<const OutDatagram> batch) noexcept {
  // One datagram goes by the direct system call: a ring SEND for it is a submission and a
  // completion more, and was slower on a blocking Null round trip.
  if (batch.size() == 1) return sendOne(batch[0]);
  MutexLock lock(sendMu_);
  Status result;
  while (!batch.empty()) {
    // Up to kSendBatch sendmsgs per submission; each carries a run of datagrams that one
    // UDP_SEGMENT send can take (a window of a message's fragments), or one datagram.
    unsigned n = 0;
    size_t taken = 0;
    while (n < kSendBatch && taken < batch.size()) {
      std::span<const OutDatagram> rest = batch.subspan(taken);
      size_t run = gso_ ? gsoRun(rest) : 1;
      GsoMessage& m = sendMsgs_[n];
      m.build(rest.first(run), options_.connect);
      io_uring_sqe* sqe = io_uring_get_sqe(sendRing_.get());
      // The ring has 2 * kSendBatch entries and we reap every completion before the next
      // chunk, so a free entry always exists.
      LRPC_CHECK(sqe != nullptr, "send ring has no free entry");
      io_uring_prep_sendmsg(sqe, fd_.get(), m.msg(), 0);
      io_uring_sqe_set_data64(sqe, n);
      taken += run;
      ++n;
    }
    // One system call submits the chunk and waits for its completions: the messages are
    // reused by the next chunk, so they must not be read after we return.
    int rc;
    do {
      rc = io_uring_submit_and_wait(sendRing_.get(), n);
    } while (rc == -EINTR);
    if (rc < 0) return uringError(rc, "io_uring_submit_and_wait(sendmsg)");
    for (unsigned done = 0; done < n;) {
      io_uring_cqe* cqe = nullptr;
      int w = io_uring_wait_cqe(sendRing_.get(), &cqe);
      if (w == -EINTR) continue;
      if (w < 0) return uringError(w, "io_uring_wait_cqe(sendmsg)");
      int res = cqe->res;
      uint64_t index = io_uring_cqe_get_data64(cqe);
      io_uring_cqe_seen(sendRing_.get(), cqe);
      ++done;
      if (res == -ECONNREFUSED) result = Status(Errc::kPeerDied, "peer port unreachable");
      // A device or kernel without segmentation offload refuses the whole run (EIO, EINVAL):
      // those datagrams are lost as on a network (the protocol resends them) and later
      // batches go one datagram per sendmsg.
      if ((res == -EIO || res == -EINVAL) && index < n && sendMsgs_[index].datagrams() > 1) gso_ = false;
      // Other failures (full queue, unreachable) drop the datagrams, as a network would.
    }
    batch = batch.subspan(taken);
  }
  return result;
}

Result<size_t> UringEndpoint::reap(DatagramSink& sink) noexcept {
  io_uring_cqe* cqes[32];
  unsigned n = io_uring_peek_batch_cqe(recvRing_.get(), cqes, 32);
  size_t delivered = 0;
  Status died;
  unsigned mask = static_cast<unsigned>(io_uring_buf_ring_mask(buffers_));
  unsigned recycled = 0;
  for (unsigned i = 0; i < n; ++i) {
    io_uring_cqe* cqe = cqes[i];
    if ((cqe->flags & IORING_CQE_F_MORE) == 0) armed_ = false;
    if (cqe->res < 0) {
      if (cqe->res == -ECONNREFUSED) died = Status(Errc::kPeerDied, "peer port unreachable");
      else if (cqe->res != -ENOBUFS && cqe->res != -ECANCELED) lrpc::detail::logf(LogTopic::kTransport, "io_uring recvmsg: %s", std::strerror(-cqe->res));
      continue;
    }
    if ((cqe->flags & IORING_CQE_F_BUFFER) == 0) continue;
    unsigned bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
    if (bid >= buffers_) continue;
    std::byte* buf = segment_.data() + size_t{bid} * bufferBytes_;
    io_uring_recvmsg_out* out = io_uring_recvmsg_validate(buf, cqe->res, &recvMsg_);
    if (out != nullptr && (out->flags & MSG_TRUNC) == 0 && out->namelen == sizeof(sockaddr_in)) {
      auto* payload = static_cast<std::byte*>(io_uring_recvmsg_payload(out, &recvMsg_));
      size_t len = io_uring_recvmsg_payload_length(out, cqe->res, &recvMsg_);
      sockaddr_in from;
      std::memcpy(&from, io_uring_recvmsg_name(out), sizeof from);
      size_t segment = len;
      if (gro_) {
        for (cmsghdr* cm = io_uring_recvmsg_cmsg_firsthdr(out, &recvMsg_); cm != nullptr;
             cm = io_uring_recvmsg_cmsg_nexthdr(out, &recvMsg_, cm)) {
          if (size_t size = groSegmentSize(*cm); size > 0) segment = size;
        }
      }
      delivered += deliver(sink, fromSockaddr(from), {payload, len}, segment);
    }
    io_uring_buf_ring_add(bufRing_, buf, static_cast<unsigned>(bufferBytes_), static_cast<unsigned short>(bid),
                          static_cast<int>(mask), static_cast<int>(recycled++));
  }
  // Publish the recycled buffers (a release store inside) before re-arming, so a re-armed
  // receive never finds the free queue empty.
  if (recycled > 0) io_uring_buf_ring_advance(bufRing_, static_cast<int>(recycled));
  if (n > 0) io_uring_cq_advance(recvRing_.get(), n);
  if (!armed_) {
    if (Status s = arm(); !s.isOk()) return s;
  }
  if (!died.isOk()) return died;
  return delivered;
}

Result<size_t> UringEndpoint::pollGro(DatagramSink& sink, int flags) noexcept {
  if (groPollBuffer_.empty()) {
    try {
      groPollBuffer_.resize(kGroBufferBytes + 1);  // one spare byte: an oversized run shows as truncated
    } catch (...) {
      return Status(Errc::kResourceExhausted, "GRO poll buffer");
    }
  }
  sockaddr_in from{};
  Result<GroDatagram> got = receiveGro(fd_.get(), groPollBuffer_, &from, flags);
  if (!got) {
    if (got.status().code() == Errc::kDeadlineExceeded) return size_t{0};  // nothing queued (in time)
    return got.status();
  }
  if (got->truncated) return size_t{0};  // oversized: dropped
  return deliver(sink, fromSockaddr(from), {groPollBuffer_.data(), got->bytes}, got->segment);
}

void UringEndpoint::adaptGro(size_t bytes) noexcept {
  if (bytes >= kBulkDatagram) {
    smallRun_ = 0;
    if (!groOn_ && ++bulkRun_ >= kGroOnAfter) groOn_ = enableGro(fd_.get(), true);
    return;
  }
  bulkRun_ = 0;
  if (groOn_ && ++smallRun_ >= kGroOffAfter) {
    groOn_ = !enableGro(fd_.get(), false);
    groDraining_ = !groOn_;
    smallRun_ = 0;
  }
}

size_t UringEndpoint::deliver(DatagramSink& sink, NetAddress from, std::span<const std::byte> payload,
                              size_t segment) noexcept {
  if (gro_) adaptGro(payload.size());
  if (segment == 0 || segment > options_.maxDatagram) return 0;  // oversized: dropped
  // Each datagram is handled where the kernel put it: the buffer is the receive queue entry
  // until it goes back on the free queue.
  size_t n = 0;
  for (size_t off = 0; off < payload.size(); off += segment) {
    sink.onDatagram(Datagram{from, payload.subspan(off, std::min(segment, payload.size() - off))});
    ++n;
  }
  return n;
}

Result<size_t> UringEndpoint::receive(DatagramSink& sink, ReceiveMode mode, std::chrono::nanoseconds timeout) noexcept {
  auto start = Clock::now();
  auto deadline = start + timeout;
  auto spinUntil = spinEnd(mode, start, timeout, options_.spinBeforeBlock);
  if (!options_.ringReceive) return receiveDirect(sink, deadline, spinUntil);
  Backoff backoff;
  if (mode == ReceiveMode::kBusyPoll && !armed_) {
    // A thread that spins anyway reads the socket itself, one non-blocking recvfrom per
    // turn. The multishot receive would make every datagram a round of task work (a poll
    // wake-up, then an enter to run it), microseconds more per datagram than the plain
    // read: most of a small call's cost over raw UDP. The receive stays unarmed until
    // a wait that sleeps arms it; from then on this endpoint busy-polls its completion queue.
    for (;;) {
      auto got = readSocket(sink, MSG_DONTWAIT);
      if (!got || *got > 0) return got;
      auto now = Clock::now();
      if (now >= deadline) return size_t{0};
      backoff.pause(now);
    }
  }
  for (;;) {
    // Peeking the completion queue is a memory read, no system call. Should completions
    // ever overflow, the kernel parks them and raises a flag; one enter flushes them. The
    // same enter runs pending receive task work (IORING_SQ_TASKRUN, see setUp). Task work
    // belongs to the arming thread: when another thread polls (a client's callers take
    // turns), the armer runs it on its next kernel entry or wake-up instead.
    if ((IO_URING_READ_ONCE(*recvRing_.get()->sq.kflags) & (IORING_SQ_CQ_OVERFLOW | IORING_SQ_TASKRUN)) != 0) {
      (void)io_uring_get_events(recvRing_.get());
    }
    if (io_uring_cq_ready(recvRing_.get()) > 0 || !armed_) {
      auto got = reap(sink);
      if (!got || *got > 0) return got;
    }
    auto now = Clock::now();
    if (now >= deadline) return size_t{0};
    if (now < spinUntil) {
      backoff.pause(now);
      continue;
    }
    auto left = std::min<std::chrono::nanoseconds>(deadline - now, std::chrono::seconds(1));
    __kernel_timespec ts{};
    ts.tv_sec = left.count() / 1000000000;
    ts.tv_nsec = left.count() % 1000000000;
    io_uring_cqe* cqe = nullptr;
    int rc = io_uring_wait_cqe_timeout(recvRing_.get(), &cqe, &ts);
    if (rc < 0 && rc != -ETIME && rc != -EINTR && rc != -EAGAIN) return uringError(rc, "io_uring_wait_cqe_timeout");
  }
}

Result<size_t> UringEndpoint::receiveAside(DatagramSink& sink) noexcept {
  if (!receivesAside()) return size_t{0};
  return aside_.read(fd_.get(), sink);
}

Result<size_t> UringEndpoint::readSocket(DatagramSink& sink, int flags) noexcept {
  if (groOn_ || groDraining_) {
    auto got = pollGro(sink, flags);
    // Runs coalesced before the option went off may still be queued; once the socket has been
    // found empty, none can be.
    if (groDraining_ && got && *got == 0) groDraining_ = false;
    return got;
  }
  // While UDP_GRO is off (and nothing coalesced is left) the plain read suffices, and it is
  // cheaper: busy-polling Null over the veth pair came to 1.10x the raw UDP floor instead of
  // 1.16x (means of four interleaved A/B runs) with recvfrom instead of recvmsg with room
  // for the control message.
  size_t bytes = 0;
  auto got = pollReceiver_.pollOne(fd_.get(), sink, flags, &bytes);
  if (gro_ && bytes > 0) adaptGro(bytes);
  return got;
}

Result<size_t> UringEndpoint::receiveDirect(DatagramSink& sink, Clock::time_point deadline,
                                            Clock::time_point spinUntil) noexcept {
  // Spinning is one non-blocking read per turn (as receive() does before arming, for the
  // same reason); sleeping is a blocking read, so the kernel wakes this very thread with
  // the datagram in hand, as it wakes a plain UDP server.
  // A spinning turn reads the clock only every kClockTurns turns: a clock read is a
  // noticeable part of an empty turn (one system call), and a shorter turn sees a datagram sooner. The
  // deadline and the switch to sleeping are then up to that many turns late (microseconds).
  constexpr uint32_t kClockTurns = 8;
  Backoff backoff;
  auto now = Clock::now();
  for (uint32_t turn = 1;; ++turn) {
    bool sleep = now >= spinUntil && now < deadline;
    auto got = sleep ? sleepRead(sink, deadline - now) : readSocket(sink, MSG_DONTWAIT);
    if (!got || *got > 0) return got;
    if (sleep || turn % kClockTurns == 0) {
      now = Clock::now();  // after a sleep (woken early: a signal, an oversized datagram) always
    }
    if (now >= deadline) return size_t{0};
    if (!sleep) backoff.pause(now);
  }
}

Result<size_t> UringEndpoint::sleepRead(DatagramSink& sink, std::chrono::nanoseconds left) noexcept {
  // SO_RCVTIMEO rounds up to whole jiffies, so it gets the whole jiffies within `left` and
  // the read never returns late; what is left below one jiffy is slept in ppoll, which is
  // exact but costs microseconds more per wake-up than the blocking read, so it is kept
  // for that rare remainder.
  // The timeout changes rarely (a server's is fixed, a client's follows its RTO), so the
  // setsockopt is mostly skipped.
  auto ticks = std::min<std::chrono::nanoseconds>(left, std::chrono::seconds(1)) / jiffy_;
  if (ticks == 0) {
    timespec ts{0, static_cast<long>(left.count())};
    pollfd p{fd_.get(), POLLIN, 0};
    int rc = ::ppoll(&p, 1, &ts, nullptr);
    if (rc < 0 && errno != EINTR) return Status::fromErrno(errno, "ppoll");
    if (rc <= 0) return size_t{0};
    return readSocket(sink, MSG_DONTWAIT);
  }
  auto timeout = ticks * jiffy_;
  if (timeout != rcvTimeout_) {
    timeval tv{static_cast<time_t>(timeout.count() / 1000000), static_cast<suseconds_t>(timeout.count() % 1000000)};
    if (::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0) {
      return Status::fromErrno(errno, "SO_RCVTIMEO");
    }
    rcvTimeout_ = timeout;
  }
  return readSocket(sink, 0);
}

}  // namespace lrpc::net
