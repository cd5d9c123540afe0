// lrpc_bulk_bench: bandwidth against message size for bulk calls, 4 KiB to 64 MiB,
// with the floors measured in the same run:
//
//   memcpy            one thread copies a buffer of that size into another (same host floor;
//                     both buffers start on a page)
//   memcpy_d16        the same, the destination 16 bytes past the source modulo 4 KiB, as a
//                     large std::vector lies against a page-aligned segment: glibc 2.36's
//                     rep movsb runs that at a fifteenth of the speed on AMD Zen 3
//   bulkcopy_d16      memcpy_d16 through lrpc's own copy (runtime/base/bulk_copy.h), which every
//                     large value lrpc copies goes through
//   tcp_stream        one-way TCP stream between the two namespaces, write() of whole
//                     messages (the network floor TCP-class throughput is measured against)
//   udp_gso_stream    one-way UDP stream between the namespaces, 64 segments of 1472 bytes per
//                     sendmsg (UDP_SEGMENT) and UDP_GRO on receive, nothing resent: what a
//                     user-level transport can reach when it batches segments per system call
//   lrpc_sink         Curves.sink(Data) over lrpc on the same host (out-of-band segment)
//   lrpc_sink_inplace Curves.sinkInPlace(Data $Lrpc.inPlace $Lrpc.progressive): the server reads
//                     the bytes in the segment without copy "E", so the client's copy is the
//                     only one, and reads each piece as soon as the client has written it
//   lrpc_echo         Curves.echo(Data) on the same host (bytes there and back: 2 x size moved;
//                     the handler returns its argument's copy, lrpc::takeArgument; results, here
//                     and in net_source, into one reused vector: lrpc::into)
//   lrpc_sink_shared  Curves.sink through lrpc::SharedBuffer: the caller's bytes are already in
//                     the shared segment (it produced them there), so the server's copy "E" is
//                     the only copy
//   lrpc_sink_zerocopy Curves.sinkInPlace through lrpc::SharedBuffer: no copy at all, the server
//                     reads the bytes where the caller produces them, each piece as it is
//                     counted ready (from 256 KiB: SharedBuffer::start/ready)
//   xcore_handoff     lrpc_sink_zerocopy's pattern with no framework and without
//                     $Lrpc.progressive: this process writes the bytes into shared memory, then
//                     a process on the other CPU reads every word where it lies, then answers
//                     (bench/handoff_floor.h; rung before the write from 256 KiB, as lrpc
//                     streams). Writing, then reading on the other core, one after the other,
//                     is why in-place handlers without $Lrpc.progressive trail lrpc_sink, whose
//                     server copies while the client is still writing
//   xcore_copy_handoff xcore_handoff, but the bytes are copied from this process's own buffer
//                     instead of written afresh: lrpc_sink_inplace's pattern with no framework
//                     (its stub copies the caller's vector into the segment), three passes over
//                     the bytes where memcpy and xcore_handoff make two
//   udp_stream        the same with one 1472-byte datagram per send(): plain UDP, no offloads
//   udp_gso_headers   udp_gso_stream, but each datagram is a 32-byte header from an array of
//                     its own plus 1440 bytes of the message, gathered by the kernel (two
//                     iovecs per datagram), and only the message bytes count: the fastest
//                     any protocol with a header per datagram and no user-level copy sends,
//                     which is how the network path sends a window of fragments
//   net_sink          Curves.sink(Data) over the UDP transport between the namespaces
//   net_source        Curves.source(n) -> Data over it: the same bytes as results
//   net_secure_sink   net_sink over an authenticated, encrypted session (the udp:// default)
//   net_secure_source net_source over one (paired with the clear-text calls at 1 MiB)
//
// Each cell is bytes moved / wall time over enough calls to fill a time budget. Ratios are
// also measured paired, in alternating rounds (pairedAtMiB): every same-host mode with memcpy
// at every size, net_sink and net_source with udp_gso_stream and udp_gso_headers at 1 MiB. Each curve
// gets r_max and n1/2 from a least-squares fit of t(n) = t0 + n / r_max over its sizes
// (n1/2 = t0 * r_max, the size at which half of r_max is reached), as in Hockney's model.
// Run as root (namespaces); without them the network rows are skipped with the reason.
//
//   lrpc_bulk_bench [--budget-ms N] [--max-mib N] [--only memcpy,tcp,gso,udp,headers,local,net,secure]
//                   [--net-mode poll|block|adaptive]
//
// Run as "lrpc_bulk_bench --server KIND READY_FD ARGS..." it is one of its own servers (the
// harness re-execs /proc/self/exe, see bench/harness.h).

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bench/handoff_floor.h"
#include "bench/harness.h"
#include "bench/lrpc_common.h"
#include "curves.lrpc.h"  // lrpc_generate(lrpc_bulk_bench .../curves.capnp)
#include "runtime/base/bulk_copy.h"
#include "runtime/exporter.h"
#include "runtime/import.h"
#include "runtime/shared_buffer.h"
#include "transport/client.h"
#include "transport/gso.h"
#include "transport/secure/keys.h"
#include "transport/server.h"
#include "transport/wire.h"

namespace lrpc::bench {
namespace {

using curves::Curves;
using Clock = std::chrono::steady_clock;

constexpr uint16_t kTcpPort = 7411;
constexpr uint16_t kUdpPort = 7412;

struct Config {
  int budgetMs = 300;  // per cell
  size_t maxBytes = size_t{64} << 20;
  std::string only;    // empty: everything
  // Receive mode of both ends of net_sink. Busy-polling by default, as net_veth; blocking
  // is the fairer match for the TCP stream (which sleeps in read) on a machine whose cores
  // are busy with other work, where a poller loses whole time slices.
  std::string netMode = "poll";
  bool wants(const char* what) const { return only.empty() || only.find(what) != std::string::npos; }
};

std::vector<size_t> sizes(const Config& cfg) {
  std::vector<size_t> out;
  for (size_t s = 4096; s <= cfg.maxBytes; s *= 4) out.push_back(s);
  if (out.back() != cfg.maxBytes && cfg.maxBytes >= 4096) out.push_back(cfg.maxBytes);
  return out;
}

struct Point {
  size_t bytes = 0;      // message size
  double seconds = 0;    // per message
  double moved = 0;      // bytes moved per message (2 x size for echo)
  bool ok = false;
};

struct Curve {
  std::string name;
  std::string note;  // why it is missing, when it is
  std::vector<Point> points;
};

// Runs `one` (one message of `size` bytes; false on failure) until the budget is used
// (at least 2 and at most 100,000 times, after one warm-up) and returns the time per message.
Point measure(size_t size, double movedFactor, int budgetMs, const std::function<bool()>& one) {
  Point p;
  p.bytes = size;
  p.moved = static_cast<double>(size) * movedFactor;
  if (!one()) return p;
  auto start = Clock::now();
  auto budget = std::chrono::milliseconds(budgetMs);
  uint64_t n = 0;
  for (; n < 100'000; ++n) {
    if (!one()) return p;
    if (n >= 1 && Clock::now() - start >= budget) {
      ++n;
      break;
    }
  }
  p.seconds = std::chrono::duration<double>(Clock::now() - start).count() / static_cast<double>(n);
  p.ok = true;
  return p;
}

// Least squares of t = t0 + n / rmax over the curve's good points, each weighted by 1/t^2
// (relative error), so that the small sizes, where t0 shows, count as much as the large ones.
void fit(const Curve& c, double* rmax, double* nHalf) {
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  int k = 0;
  for (const Point& p : c.points) {
    if (!p.ok) continue;
    double x = p.moved, y = p.seconds, w = 1 / (y * y);
    sw += w, sx += w * x, sy += w * y, sxx += w * x * x, sxy += w * x * y;
    ++k;
  }
  *rmax = *nHalf = 0;
  if (k < 2) return;
  double slope = (sw * sxy - sx * sy) / (sw * sxx - sx * sx);
  double t0 = (sy - slope * sx) / sw;
  if (slope <= 0) return;
  *rmax = 1 / slope;
  *nHalf = std::max(0.0, t0) * *rmax;
}

std::string human(double bytes) {
  char buf[32];
  if (bytes >= (1 << 20)) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / (1 << 20));
  } else {
    std::snprintf(buf, sizeof buf, "%.0f KiB", bytes / 1024);
  }
  return buf;
}

// ---- the TCP stream floor ----

// Server: accepts one connection; per message size the client sends an 8-byte count, then
// that many bytes; the server answers one byte once it has read them all.
int serveTcpSink(int readyFd) {
  OwnedFd listenFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  int one = 1;
  ::setsockopt(listenFd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a = inetAddr("0.0.0.0", kTcpPort);
  if (::bind(listenFd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listenFd.get(), 4) != 0) return 3;
  signalReady(readyFd);
  OwnedFd c(::accept4(listenFd.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!c.valid()) return 3;
  std::vector<char> buf(size_t{1} << 20);
  for (;;) {
    uint64_t total = 0;
    if (!readFull(c.get(), &total, sizeof total)) return 0;
    while (total > 0) {
      ssize_t r = ::read(c.get(), buf.data(), std::min<uint64_t>(total, buf.size()));
      if (r <= 0) return 0;
      total -= static_cast<uint64_t>(r);
    }
    char ack = 1;
    if (!writeFull(c.get(), &ack, 1)) return 0;
  }
}

Curve tcpStream(const Config& cfg, const NetnsPair& ns) {
  Curve c{"tcp_stream", {}, {}};
  ServerSpec spec;
  spec.kind = "tcp_sink";
  spec.netns = ns.nsPath(true);
  Result<std::unique_ptr<ServerProcess>> server = ServerProcess::start(spec);
  if (!server) return {c.name, server.status().toString(), {}};
  Result<OwnedFd> connected = connectToServer(ns, SOCK_STREAM, kTcpPort);
  if (!connected) return {c.name, connected.status().toString(), {}};
  OwnedFd s = std::move(*connected);
  std::vector<char> msg(cfg.maxBytes, 0x5a);
  for (size_t size : sizes(cfg)) {
    // A burst of messages per measured unit, so that the ack's round trip does not count
    // against small sizes: the stream's bandwidth, not a ping-pong.
    size_t burst = std::max<size_t>(1, (size_t{16} << 20) / size);
    Point p = measure(size, static_cast<double>(burst), cfg.budgetMs, [&] {
      uint64_t total = static_cast<uint64_t>(size) * burst;
      if (!writeFull(s.get(), &total, sizeof total)) return false;
      for (size_t i = 0; i < burst; ++i) {
        if (!writeFull(s.get(), msg.data(), size)) return false;
      }
      char ack;
      return static_cast<bool>(readFull(s.get(), &ack, 1));
    });
    c.points.push_back(p);
  }
  return c;
}

// ---- the UDP GSO/GRO stream floor ----

// Server: counts bytes received with UDP_GRO (many segments per recvmsg); answers a 1-byte
// datagram with the 8-byte count so far.
int serveUdpGsoSink(int readyFd) {
  OwnedFd s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_in a = inetAddr("0.0.0.0", kUdpPort);
  int rcv = 32 << 20;
  ::setsockopt(s.get(), SOL_SOCKET, SO_RCVBUFFORCE, &rcv, sizeof rcv);
  if (::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return 3;
  if (!net::enableGro(s.get())) return 3;
  signalReady(readyFd);
  std::vector<std::byte> buf(net::kGroBufferBytes);
  uint64_t received = 0;
  for (;;) {
    sockaddr_in from{};
    Result<net::GroDatagram> got = net::receiveGro(s.get(), buf, &from);
    if (!got) return 0;
    if (got->bytes == 1) {
      (void)::sendto(s.get(), &received, sizeof received, 0, reinterpret_cast<sockaddr*>(&from), sizeof from);
    } else {
      received += got->bytes;
    }
  }
}

enum class Stream {
  kGso,         // udp_gso_stream: as many 1472-byte segments per send as UDP_SEGMENT takes
  kPlain,       // udp_stream: one 1472-byte datagram per send, what a transport without offloads gets
  kGsoHeaders,  // udp_gso_headers: kGso with a separate 32-byte header gathered into each datagram
};

// The header of udp_gso_headers' datagrams: the size of the transport's, in an array apart from
// the message as the transport's are, and written for every send as the transport writes its
// own (a counter stands for the fragment number).
constexpr size_t kStreamHeaderBytes = net::kHeaderBytes;
constexpr size_t kStreamHeaderPayload = net::kGsoSegmentBytes - kStreamHeaderBytes;

// One GSO send of up to gsoMaxBytes(1472) wire bytes: `message` cut into 1440-byte pieces, each
// behind its own header. Returns the message bytes sent.
Result<size_t> sendWithHeaders(int fd, std::span<const std::byte> message, uint32_t* counter) {
  constexpr size_t kMaxSegments = net::gsoMaxBytes(net::kGsoSegmentBytes) / net::kGsoSegmentBytes;
  struct Header {
    uint32_t words[kStreamHeaderBytes / sizeof(uint32_t)];
  };
  static_assert(sizeof(Header) == kStreamHeaderBytes);
  Header headers[kMaxSegments];
  iovec iov[2 * kMaxSegments];
  size_t n = 0, taken = 0;
  for (; n < kMaxSegments && taken < message.size(); ++n) {
    size_t piece = std::min(kStreamHeaderPayload, message.size() - taken);
    headers[n] = Header{{++*counter}};
    iov[2 * n] = {&headers[n], sizeof(Header)};
    iov[2 * n + 1] = {const_cast<std::byte*>(message.data() + taken), piece};
    taken += piece;
  }
  Result<size_t> sent = net::sendGso(fd, std::span<const iovec>(iov, 2 * n), net::kGsoSegmentBytes);
  if (!sent) return sent.status();
  return taken;
}

// The sending end of a raw UDP stream into the udp_gso_sink server between the namespaces.
// Kept open by netCurves too, which alternates its sends with calls (pairedAtMiB).
class StreamEnd {
 public:
  static Result<std::unique_ptr<StreamEnd>> open(const NetnsPair& ns) {
    ServerSpec spec;
    spec.kind = "udp_gso_sink";
    spec.netns = ns.nsPath(true);
    Result<std::unique_ptr<ServerProcess>> server = ServerProcess::start(spec);
    if (!server) return server.status();
    Result<OwnedFd> connected = connectToServer(ns, SOCK_DGRAM, kUdpPort);
    if (!connected) return connected.status();
    OwnedFd s = std::move(*connected);
    int snd = 32 << 20;
    ::setsockopt(s.get(), SOL_SOCKET, SO_SNDBUFFORCE, &snd, sizeof snd);
    timeval tv{1, 0};
    ::setsockopt(s.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return std::unique_ptr<StreamEnd>(new StreamEnd(std::move(*server), std::move(s)));
  }

  // The bytes the sink has received so far (UINT64_MAX when it does not answer). The probe
  // queues behind the data, so every byte sent before it is counted.
  uint64_t countSoFar() {
    char probe = 1;
    uint64_t n = 0;
    for (int tries = 0; tries < 5; ++tries) {
      if (::send(s_.get(), &probe, 1, 0) != 1) continue;
      if (::recv(s_.get(), &n, sizeof n, 0) == sizeof n) return n;
    }
    return UINT64_MAX;
  }

  // Sends one message as `kind`; false on a send error.
  bool send(std::span<const std::byte> message, Stream kind) {
    const bool gso = kind != Stream::kPlain;
    const size_t size = message.size();
    for (size_t off = 0; off < size;) {
      if (kind == Stream::kGsoHeaders) {
        Result<size_t> sent = sendWithHeaders(s_.get(), message.subspan(off), &counter_);
        if (!sent) return false;
        off += *sent;
        sentTotal_ += *sent + (*sent + kStreamHeaderPayload - 1) / kStreamHeaderPayload * kStreamHeaderBytes;
        continue;
      }
      size_t n = std::min(size - off, gso ? net::gsoMaxBytes(net::kGsoSegmentBytes) : net::kGsoSegmentBytes);
      if (gso) {
        Result<size_t> sent = net::sendGso(s_.get(), message.subspan(off, n), net::kGsoSegmentBytes);
        if (!sent) return false;
      } else if (::send(s_.get(), message.data() + off, n, 0) != static_cast<ssize_t>(n)) {
        if (errno != ENOBUFS && errno != EAGAIN) return false;
        continue;  // the send queue is full: offer it again, as a stream would
      }
      off += n;
      sentTotal_ += n;
    }
    return true;
  }
  // Wire payload bytes sent (with udp_gso_headers' headers), to compare with what arrived.
  uint64_t sentTotal() const noexcept { return sentTotal_; }

 private:
  StreamEnd(std::unique_ptr<ServerProcess> server, OwnedFd s) noexcept : server_(std::move(server)), s_(std::move(s)) {}

  std::unique_ptr<ServerProcess> server_;
  OwnedFd s_;
  uint64_t sentTotal_ = 0;
  uint32_t counter_ = 0;
};

const char* streamName(Stream kind) {
  return kind == Stream::kGso ? "udp_gso_stream" : kind == Stream::kPlain ? "udp_stream" : "udp_gso_headers";
}

Curve udpStream(const Config& cfg, const NetnsPair& ns, Stream kind) {
  Curve c{streamName(kind), {}, {}};
  Result<std::unique_ptr<StreamEnd>> end = StreamEnd::open(ns);
  if (!end) return {c.name, end.status().toString(), {}};
  StreamEnd& s = **end;
  std::vector<std::byte> msg(cfg.maxBytes, std::byte{0x5a});
  uint64_t base = s.countSoFar();
  if (base == UINT64_MAX) return {c.name, "the sink does not answer", {}};
  for (size_t size : sizes(cfg)) {
    size_t burst = std::max<size_t>(1, (size_t{16} << 20) / size);
    Point p = measure(size, static_cast<double>(burst), cfg.budgetMs, [&] {
      for (size_t i = 0; i < burst; ++i) {
        if (!s.send(std::span<const std::byte>(msg.data(), size), kind)) return false;
      }
      return true;
    });
    c.points.push_back(p);
  }
  // A stream with no resends: report what arrived, not what was sent.
  uint64_t got = s.countSoFar();
  if (got != UINT64_MAX && s.sentTotal() > 0) {
    char note[96];
    std::snprintf(note, sizeof note, "received %.1f%% of the bytes sent (no resends; rows are send rates)",
                  100.0 * static_cast<double>(got - base) / static_cast<double>(s.sentTotal()));
    c.note = note;
  }
  return c;
}

// ---- lrpc: the Curves service on the same host and over the network ----

class CurvesImpl final : public Curves::Server {
 public:
  // Returns the argument's own copy (lrpc::takeArgument), as an echo or a store-and-return
  // server would: on the same host the handler copies nothing itself, and over the network,
  // where the argument lies in the request buffer, the copy goes into lrpc::resultBuffer()'s
  // warm storage.
  Result<std::vector<uint8_t>> echo(std::span<const uint8_t> data) override { return lrpc::takeArgument(data); }
  Status sink(std::span<const uint8_t> data) override {
    sum_ += data.empty() ? 0 : data[data.size() / 2];  // touch it, like a real consumer would
    return {};
  }
  // Reads every byte where it lies: copy "E" delivered the bytes into the server's memory by
  // reading all of them, so the in-place path pays for one full read too (without the write).
  // It reads a piece at a time as the client writes them ($Lrpc.progressive), as copy "E" does.
  Status sinkInPlace(std::span<const uint8_t> data) override {
    uint64_t acc = 0;
    const size_t words = data.size() / sizeof(uint64_t);
    constexpr size_t kPieceWords = LocalCall::kStreamChunk / sizeof(uint64_t);
    for (size_t i = 0; i < words;) {
      const size_t end = std::min(words, i + kPieceWords);
      if (Status s = lrpc::awaitArgument(data, end * sizeof(uint64_t)); !s.isOk()) return s;
      for (; i < end; ++i) {
        uint64_t w;
        std::memcpy(&w, data.data() + i * sizeof w, sizeof w);
        acc += w;
      }
    }
    sum_ += acc;
    return {};
  }
  // The bytes are produced afresh for every call (a fill), as a server reading them from
  // somewhere would write them.
  Result<std::vector<uint8_t>> source(uint32_t bytes) override {
    std::vector<uint8_t> out = lrpc::resultBuffer();
    out.assign(bytes, static_cast<uint8_t>(++calls_));
    return out;
  }

 private:
  uint64_t sum_ = 0;
  uint32_t calls_ = 0;
};

CallOptions bulkDeadline() {
  CallOptions o;
  o.timeout = std::chrono::seconds(60);
  return o;
}

// Which Curves method a curve calls.
enum class Op { kSink, kSinkInPlace, kEcho, kSource };

Curve runCurve(const std::string& name, const Config& cfg, Curves::Client& client, Op op) {
  Curve c{name, {}, {}};
  std::vector<uint8_t> data(cfg.maxBytes, 0x5a);
  // Results land in one vector, call after call (lrpc::into), as a loop fetching large values
  // would keep them: a fresh vector past glibc's mmap threshold is new pages on every call.
  std::vector<uint8_t> result;
  for (size_t size : sizes(cfg)) {
    std::span<const uint8_t> in(data.data(), size);
    Point p = measure(size, op == Op::kEcho ? 2.0 : 1.0, cfg.budgetMs, [&] {
      if (op == Op::kEcho) return client.echo(in, lrpc::into(result)).isOk() && result.size() == size;
      if (op == Op::kSource) {
        return client.source(static_cast<uint32_t>(size), lrpc::into(result)).isOk() && result.size() == size;
      }
      return (op == Op::kSink ? client.sink(in) : client.sinkInPlace(in)).isOk();
    });
    c.points.push_back(p);
    if (!p.ok) {
      c.note = "a call failed at " + human(static_cast<double>(size));
      break;
    }
  }
  return c;
}

// One sink through a SharedBuffer: the caller produces the payload in the shared segment
// (a memset standing for whatever writes its output there) instead of in private memory and
// copying it; so the lines are dirty in the caller's cache when the server copies them out,
// as they would be after a real producer. Writing only a byte per call would let the server
// read its own cached copy of the last call's bytes instead.
// From LocalCall::kStreamBytes on, the payload is handed over while it is produced
// (SharedBuffer::start/ready, in the stubs' chunks), so the server's copy overlaps it.
// With Curves::kSinkInPlace as `procedure`, nothing is copied at all (lrpc_sink_zerocopy).
bool sharedSink(Curves::Client& client, size_t size, uint8_t fill, uint32_t procedure = Curves::kSink) {
  Result<SharedBuffer> buf = SharedBuffer::allocate(*client.binding(), procedure, size, bulkDeadline());
  if (!buf.isOk()) return false;
  static_assert(sizeof(Curves::SinkArgsFrame) == sizeof(Curves::SinkInPlaceArgsFrame));
  Curves::SinkArgsFrame frame{{0, static_cast<uint32_t>(size)}};
  std::memcpy(buf->args(), &frame, sizeof frame);
  std::byte* out = buf->bytes().data();
  if (size >= LocalCall::kStreamBytes && buf->start()) {
    for (size_t done = 0; done < size;) {
      size_t c = std::min(LocalCall::kStreamChunk, size - done);
      std::memset(out + done, fill, c);
      done += c;
      buf->ready(done);
    }
  } else {
    std::memset(out, fill, size);
  }
  return buf->invoke().isOk();
}

Curve runSharedCurve(const Config& cfg, Curves::Client& client, uint32_t procedure, const char* name) {
  Curve c{name, {}, {}};
  uint8_t n = 0;
  for (size_t size : sizes(cfg)) {
    Point p = measure(size, 1.0, cfg.budgetMs, [&] { return sharedSink(client, size, ++n, procedure); });
    c.points.push_back(p);
    if (!p.ok) {
      c.note = "a call failed at " + human(static_cast<double>(size));
      break;
    }
  }
  return c;
}

// Two buffers of `bytes`, each starting on a page, the destination `distance` bytes past its
// page: memcpy's floor at distance 0. Two vectors allocated one after the other would put the
// second 16 bytes past the first modulo 4 KiB, the distance at which this CPU's memcpy runs at a
// fifteenth of its speed (runtime/base/bulk_copy.h), and the floor would be that slow case.
struct CopyBuffers {
  CopyBuffers(size_t bytes, size_t distance)
      : fromStore(bytes + 4096, 1), toStore(bytes + 8192, 2), from(onPage(fromStore.data())), to(onPage(toStore.data()) + distance) {}
  static char* onPage(char* p) { return p + (4096 - reinterpret_cast<uintptr_t>(p) % 4096) % 4096; }
  std::vector<char> fromStore, toStore;
  char* from;
  char* to;
};

// A same-host ratio at 1 MiB against memcpy, paired: rounds alternate a burst of memcpy with
// a burst of the lrpc call (the order alternates too), each burst timed on its own, and the
// ratio is the median over the rounds of bandwidth(lrpc) / bandwidth(memcpy). The curves
// measure memcpy and each lrpc curve seconds apart, and on a virtual machine memcpy's
// bandwidth can change by half from one minute to the next.
struct PairedRatio {
  std::string name;
  std::string floor;
  size_t bytes = size_t{1} << 20;  // what one call moves each way
  double median = 0, lo = 0, hi = 0;
  bool ok = false;
  std::string failure = "a call failed";  // when !ok
};

// `call` and `floor` each move the same bytes (1 MiB, unless `bytes` says otherwise); 21 rounds
// alternate a burst of one with a burst of the other (8 calls, or as many as move 1 MiB where
// that is more, so that a small size's burst is not timed in microseconds; each burst after
// one untimed warm-up: an adaptive server may be asleep after the other's burst), and the
// median of the rounds' bandwidth ratios is the result. Both sides see the host as it is in
// that round, which a ratio of two curves measured minutes apart does not.
PairedRatio pairedAtMiB(const std::string& name, const std::string& floorName, const std::function<bool()>& call,
                        const std::function<bool()>& floor, size_t bytes = size_t{1} << 20) {
  constexpr int kRounds = 21;
  const size_t perMiB = (size_t{1} << 20) / std::max<size_t>(bytes, 1);
  const int burstCalls = static_cast<int>(std::max<size_t>(8, perMiB));
  auto burst = [&](const std::function<bool()>& one) -> double {
    if (!one()) return -1;
    auto t0 = Clock::now();
    for (int i = 0; i < burstCalls; ++i) {
      if (!one()) return -1;
    }
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  PairedRatio r{name, floorName, bytes};
  std::vector<double> ratios;
  for (int round = 0; round < kRounds; ++round) {
    bool floorFirst = round % 2 == 0;
    double a = burst(floorFirst ? floor : call);
    double b = a < 0 ? -1 : burst(floorFirst ? call : floor);
    if (a < 0 || b < 0) return r;
    double floorSeconds = floorFirst ? a : b, callSeconds = floorFirst ? b : a;
    ratios.push_back(floorSeconds / callSeconds);  // bandwidth ratio: same bytes each side
  }
  std::sort(ratios.begin(), ratios.end());
  r.median = ratios[ratios.size() / 2];
  r.lo = ratios.front();
  r.hi = ratios.back();
  r.ok = true;
  return r;
}

// A same-host mode moving `bytes` per call, paired with `copies` memcpys of `bytes` (an echo
// moves them there and back, and the curves count both directions). The goals are at every
// size, and from 4 MiB one memcpy runs at memory speed, which the 1 MiB pairs do not show.
PairedRatio pairedWithMemcpy(const std::string& name, size_t bytes, const std::function<bool()>& call, int copies = 1) {
  CopyBuffers b(bytes, 0);
  return pairedAtMiB(
      name, "memcpy", call,
      [&] {
        for (int i = 0; i < copies; ++i) {
          std::memcpy(b.to, b.from, bytes);
          b.from[bytes / 2] = b.to[bytes / 3];  // a data dependency, so the copy cannot be dropped
        }
        return true;
      },
      bytes);
}

// xcore_handoff, or with `from` (the caller's bytes, at least cfg.maxBytes) xcore_copy_handoff.
Curve handoffCurve(const Config& cfg, HandoffFloor& floor, const std::byte* from = nullptr) {
  Curve c{from == nullptr ? "xcore_handoff" : "xcore_copy_handoff", {}, {}};
  uint8_t n = 0;
  for (size_t size : sizes(cfg)) {
    Point p = measure(size, 1.0, cfg.budgetMs,
                      [&] { return from == nullptr ? floor.handOff(size, ++n) : floor.copyOver(from, size); });
    c.points.push_back(p);
    if (!p.ok) {
      c.note = "the reader did not answer at " + human(static_cast<double>(size));
      break;
    }
  }
  return c;
}

int serveLocal(int readyFd, int argc, char** argv) {
  if (argc < 1) return 2;
  sigset_t term = blockTerm();
  ExporterOptions options;
  options.dir = argv[0];
  CurvesImpl impl;
  Exporter exporter(options);
  if (Status s = exporter.add<Curves>("bulk", impl); !s) {
    std::fprintf(stderr, "lrpc_bulk_bench server: %s\n", s.toString().c_str());
    return 3;
  }
  signalReady(readyFd);
  waitForTerm(term);
  return 0;
}

std::vector<Curve> localCurves(const Config& cfg, std::vector<PairedRatio>* paired) {
  std::string dir = "/tmp/lrpc-bulk-bench-" + std::to_string(::getpid());
  ServerSpec spec;
  spec.kind = "bulk_local";
  spec.args = {dir};
  Result<std::unique_ptr<ServerProcess>> server = ServerProcess::start(spec);
  if (!server) return {{"lrpc_sink", server.status().toString(), {}}};
  std::vector<Curve> out;
  for (TransferMode mode : {TransferMode::kAdaptive, TransferMode::kSpin}) {
    ImportOptions options;
    options.mode = mode;
    options.dir = dir;
    Result<Curves::Client> client = import<Curves>("bulk", options);
    std::string suffix = mode == TransferMode::kSpin ? "_spin" : "";
    if (!client) {
      out.push_back({"lrpc_sink" + suffix, client.status().toString(), {}});
      continue;
    }
    Curves::Client c = client->withOptions(bulkDeadline());
    out.push_back(runCurve("lrpc_sink" + suffix, cfg, c, Op::kSink));
    if (mode == TransferMode::kAdaptive) out.push_back(runCurve("lrpc_sink_inplace", cfg, c, Op::kSinkInPlace));
    out.push_back(runCurve("lrpc_echo" + suffix, cfg, c, Op::kEcho));
    if (mode == TransferMode::kAdaptive) {
      out.push_back(runSharedCurve(cfg, c, Curves::kSink, "lrpc_sink_shared"));
      out.push_back(runSharedCurve(cfg, c, Curves::kSinkInPlace, "lrpc_sink_zerocopy"));
    }
    if (mode == TransferMode::kAdaptive && cfg.maxBytes >= (size_t{1} << 20)) {
      uint8_t n = 0;
      std::vector<uint8_t> result;
      for (size_t bytes = size_t{4} << 10; bytes <= cfg.maxBytes; bytes *= 4) {
        std::vector<uint8_t> data(bytes, 0x5a);
        paired->push_back(pairedWithMemcpy("lrpc_sink", bytes, [&] { return c.sink(data).isOk(); }));
        paired->push_back(pairedWithMemcpy("lrpc_sink_inplace", bytes, [&] { return c.sinkInPlace(data).isOk(); }));
        paired->push_back(pairedWithMemcpy("lrpc_sink_shared", bytes, [&] { return sharedSink(c, bytes, ++n); }));
        paired->push_back(pairedWithMemcpy("lrpc_sink_zerocopy", bytes,
                                           [&] { return sharedSink(c, bytes, ++n, Curves::kSinkInPlace); }));
        paired->push_back(pairedWithMemcpy(
            "lrpc_echo", bytes, [&] { return c.echo(data, lrpc::into(result)).isOk() && result.size() == bytes; }, 2));
      }
      // The pattern of an in-place handler without $Lrpc.progressive, with no framework:
      // writing the lines here, then reading them on the server's CPU.
      if (Result<std::unique_ptr<HandoffFloor>> floor = HandoffFloor::start(cfg.maxBytes); floor.isOk()) {
        out.push_back(handoffCurve(cfg, **floor));
        // The caller's bytes for xcore_copy_handoff, faulted in before anything is timed.
        std::vector<std::byte> source(cfg.maxBytes, std::byte{0x5a});
        out.push_back(handoffCurve(cfg, **floor, source.data()));
      } else {
        out.push_back({"xcore_handoff", floor.status().toString(), {}});
      }
    }
  }
  server->reset();
  ::rmdir(dir.c_str());
  return out;
}

int serveNet(int readyFd, int argc, char** argv) {
  if (argc < 2) return 2;
  sigset_t term = blockTerm();
  net::ServerOptions options;
  Result<net::ReceiveMode> mode = net::parseReceiveMode(argv[1]);
  if (!mode) return 2;
  options.mode = *mode;
  // "secure": a key pair made here, any client (the client pins the key we report).
  const bool secure = argc >= 3 && std::string_view(argv[2]) == "secure";
  std::string key;
  if (secure) {
    Result<secure::KeyPair> pair = secure::KeyPair::generate();
    if (!pair) return 3;
    key = pair->publicKey().toText();
    options.security.keyPair = *pair;
    options.security.anyClient = true;
  } else {
    options.security.clearText = true;
  }
  CurvesImpl impl;
  net::UdpServer server(options);
  Result<uint16_t> port = Status(Errc::kInvalidArgument, "not bound");
  Status s = server.add<Curves>("bulk", impl);
  if (s) {
    port = server.bind(argv[0]);
    s = port ? server.start() : port.status();
  }
  if (!s) {
    std::fprintf(stderr, "lrpc_bulk_bench server: %s\n", s.toString().c_str());
    return 3;
  }
  signalReady(readyFd, std::to_string(port.value()) + (secure ? " " + key : ""));
  waitForTerm(term);
  return 0;
}

// net_sink (1 MiB arguments) and net_source (1 MiB results) over one session.
// Pairs net_sink and net_source at 1 MiB with 1 MiB of a raw stream (pairedAtMiB). Both
// servers live on CPU 1, so the network server, which busy-polls, is stopped (SIGSTOP) for
// each burst of the stream and continued for each burst of calls, in the untimed warm-ups.
void pairNet(const NetnsPair& ns, const ServerProcess& netServer, Curves::Client& c, Stream kind,
             std::vector<PairedRatio>* paired) {
  Result<std::unique_ptr<StreamEnd>> end = StreamEnd::open(ns);
  if (!end) {
    for (const char* name : {"net_sink", "net_source"}) {
      PairedRatio failed{name, streamName(kind)};
      failed.failure = "the raw stream did not open: " + end.status().toString();
      paired->push_back(std::move(failed));
    }
    return;
  }
  constexpr size_t kMiB = size_t{1} << 20;
  std::vector<uint8_t> data(kMiB, 0x5a);
  const std::span<const std::byte> bytes = std::as_bytes(std::span<const uint8_t>(data));
  bool stopped = false;
  auto park = [&](bool stop) {
    if (stop != stopped) ::kill(netServer.pid(), stop ? SIGSTOP : SIGCONT);
    stopped = stop;
  };
  auto floor = [&] {
    park(true);
    return (*end)->send(bytes, kind);
  };
  paired->push_back(pairedAtMiB("net_sink", streamName(kind), [&] {
    park(false);
    return c.sink(data).isOk();
  }, floor));
  std::vector<uint8_t> result;
  paired->push_back(pairedAtMiB("net_source", streamName(kind), [&] {
    park(false);
    return c.source(static_cast<uint32_t>(kMiB), lrpc::into(result)).isOk() && result.size() == kMiB;
  }, floor));
  park(false);
}

// A network server of its own ("secure": authenticated and encrypted, else clear text) and a
// client connected to it from the client namespace.
struct NetSide {
  std::unique_ptr<ServerProcess> server;
  Curves::Client client;
};
Result<NetSide> startNetSide(const Config& cfg, const NetnsPair& ns, bool secure) {
  ServerSpec spec;
  spec.kind = "bulk_net";
  spec.args = {ns.ipA() + ":0", cfg.netMode, secure ? "secure" : "clear"};
  spec.netns = ns.nsPath(true);
  Result<std::unique_ptr<ServerProcess>> server = ServerProcess::start(spec);
  if (!server) return server.status();
  Result<net::ReceiveMode> mode = net::parseReceiveMode(cfg.netMode);
  if (!mode) return mode.status();
  net::ClientOptions options;
  options.mode = *mode;
  const std::string& ready = (*server)->readyInfo();
  const size_t space = ready.find(' ');
  const std::string host = ns.ipA() + ":" + ready.substr(0, space);
  const std::string uri = secure && space != std::string::npos
                              ? "udp://" + host + "/bulk?key=" + ready.substr(space + 1)
                              : "udp+clear://" + host + "/bulk";
  Result<Curves::Client> client = Status(Errc::kInvalidArgument);
  {
    Result<NetnsScope> in = NetnsScope::enter(ns.nsPath(false));
    if (!in) return in.status();
    client = net::connect<Curves>(uri, options);
  }
  if (!client) return client.status();
  return NetSide{std::move(*server), client->withOptions(bulkDeadline())};
}

// net_secure_sink and net_secure_source at 1 MiB, paired with the clear-text calls (each
// server busy-polls on CPU 1: the one not in use is stopped for the other's bursts).
void pairSecure(NetSide& clear, NetSide& secure, std::vector<PairedRatio>* paired) {
  constexpr size_t kMiB = size_t{1} << 20;
  std::vector<uint8_t> data(kMiB, 0x5a);
  const ServerProcess* running = nullptr;
  auto use = [&](NetSide& side) {
    if (running == side.server.get()) return;
    NetSide& other = &side == &clear ? secure : clear;
    ::kill(other.server->pid(), SIGSTOP);
    ::kill(side.server->pid(), SIGCONT);
    running = side.server.get();
  };
  auto sink = [&](NetSide& side) {
    use(side);
    return side.client.sink(data).isOk();
  };
  std::vector<uint8_t> result;
  auto source = [&](NetSide& side) {
    use(side);
    return side.client.source(static_cast<uint32_t>(kMiB), lrpc::into(result)).isOk() && result.size() == kMiB;
  };
  paired->push_back(pairedAtMiB("net_secure_sink", "net_sink", [&] { return sink(secure); }, [&] { return sink(clear); }));
  paired->push_back(
      pairedAtMiB("net_secure_source", "net_source", [&] { return source(secure); }, [&] { return source(clear); }));
  ::kill(clear.server->pid(), SIGCONT);
  ::kill(secure.server->pid(), SIGCONT);
}

std::vector<Curve> netCurves(const Config& cfg, const NetnsPair& ns, std::vector<PairedRatio>* paired) {
  auto failed = [](const char* name, const Status& s) { return Curve{name, s.toString(), {}}; };
  Result<NetSide> clear = startNetSide(cfg, ns, false);
  if (!clear) return {failed("net_sink", clear.status())};
  std::vector<Curve> out;
  out.push_back(runCurve("net_sink", cfg, clear->client, Op::kSink));
  out.push_back(runCurve("net_source", cfg, clear->client, Op::kSource));
  if (cfg.maxBytes >= (size_t{1} << 20)) {
    pairNet(ns, *clear->server, clear->client, Stream::kGso, paired);
    pairNet(ns, *clear->server, clear->client, Stream::kGsoHeaders, paired);
  }
  if (!cfg.wants("secure")) return out;
  // The secure curves run with the clear server stopped: both busy-poll on CPU 1.
  ::kill(clear->server->pid(), SIGSTOP);
  Result<NetSide> secure = startNetSide(cfg, ns, true);
  if (!secure) {
    ::kill(clear->server->pid(), SIGCONT);
    out.push_back(failed("net_secure_sink", secure.status()));
    return out;
  }
  out.push_back(runCurve("net_secure_sink", cfg, secure->client, Op::kSink));
  out.push_back(runCurve("net_secure_source", cfg, secure->client, Op::kSource));
  ::kill(clear->server->pid(), SIGCONT);
  if (cfg.maxBytes >= (size_t{1} << 20)) pairSecure(*clear, *secure, paired);
  return out;
}

// ---- memcpy ----

// memcpy's speed on this CPU depends on where the destination lies against the source
// (runtime/base/bulk_copy.h): the floor copies between page-aligned buffers, the best case,
// and `distance` puts the destination that many bytes further (modulo 4 KiB).
Curve memcpyCurve(const Config& cfg, const char* name, size_t distance, void (*copy)(void*, const void*, size_t)) {
  Curve c{name, {}, {}};
  CopyBuffers b(cfg.maxBytes, distance);
  for (size_t size : sizes(cfg)) {
    c.points.push_back(measure(size, 1.0, cfg.budgetMs, [&] {
      copy(b.to, b.from, size);
      b.from[size / 2] = b.to[size / 3];  // a data dependency, so the copy cannot be dropped
      return true;
    }));
  }
  return c;
}

void plainMemcpy(void* to, const void* from, size_t n) { std::memcpy(to, from, n); }

void report(const std::vector<Curve>& curves, const std::vector<PairedRatio>& paired, const Config& cfg) {
  std::printf("\n| curve |");
  for (size_t s : sizes(cfg)) std::printf(" %s |", human(static_cast<double>(s)).c_str());
  std::printf(" r_max GB/s | n1/2 |\n|---|");
  for (size_t i = 0; i < sizes(cfg).size(); ++i) std::printf("---|");
  std::printf("---|---|\n");
  for (const Curve& c : curves) {
    std::printf("| %s |", c.name.c_str());
    for (size_t s : sizes(cfg)) {
      auto it = std::find_if(c.points.begin(), c.points.end(), [s](const Point& p) { return p.bytes == s; });
      if (it == c.points.end() || !it->ok) {
        std::printf(" - |");
      } else {
        std::printf(" %.2f |", it->moved / it->seconds / 1e9);
      }
    }
    double rmax, nHalf;
    fit(c, &rmax, &nHalf);
    if (rmax > 0) {
      std::printf(" %.2f | %s |", rmax / 1e9, human(nHalf).c_str());
    } else {
      std::printf(" - | - |");
    }
    if (!c.note.empty()) std::printf(" %s", c.note.c_str());
    std::printf("\n");
  }
  std::printf("\nCells: GB/s (10^9 bytes/s) of payload moved; echo counts both directions.\n");
  // The targets, at 1 MiB: same host against memcpy, network against the TCP stream.
  auto at = [&](const char* name, size_t bytes) -> double {
    for (const Curve& c : curves) {
      if (c.name != name) continue;
      for (const Point& p : c.points) {
        if (p.bytes == bytes && p.ok) return p.moved / p.seconds;
      }
    }
    return 0;
  };
  const size_t mib = size_t{1} << 20;
  struct Ratio {
    const char* what;
    const char* floor;
  };
  for (Ratio r : {Ratio{"lrpc_sink", "memcpy"}, Ratio{"lrpc_sink_inplace", "memcpy"}, Ratio{"lrpc_sink_shared", "memcpy"},
                  Ratio{"lrpc_sink_zerocopy", "memcpy"}, Ratio{"xcore_handoff", "memcpy"},
                  Ratio{"xcore_copy_handoff", "memcpy"},
                  Ratio{"lrpc_echo", "memcpy"},
                  Ratio{"net_sink", "tcp_stream"}, Ratio{"net_sink", "udp_gso_stream"}, Ratio{"net_sink", "udp_stream"},
                  Ratio{"net_source", "tcp_stream"}, Ratio{"net_source", "udp_gso_stream"},
                  Ratio{"net_source", "udp_stream"}, Ratio{"net_sink", "udp_gso_headers"},
                  Ratio{"net_source", "udp_gso_headers"}, Ratio{"udp_gso_headers", "udp_gso_stream"},
                  Ratio{"net_secure_sink", "net_sink"}, Ratio{"net_secure_source", "net_source"}}) {
    double a = at(r.what, mib), b = at(r.floor, mib);
    if (a > 0 && b > 0) std::printf("1 MiB: %s / %s = %.0f%%\n", r.what, r.floor, 100 * a / b);
  }
  // The same-host modes against memcpy, paired, as one table: a mode per row, a size per column.
  std::vector<std::string> modes;
  std::vector<size_t> pairedSizes;
  for (const PairedRatio& r : paired) {
    if (r.floor != "memcpy") continue;
    if (std::find(modes.begin(), modes.end(), r.name) == modes.end()) modes.push_back(r.name);
    if (std::find(pairedSizes.begin(), pairedSizes.end(), r.bytes) == pairedSizes.end()) pairedSizes.push_back(r.bytes);
  }
  if (!modes.empty()) {
    std::printf("\nPaired against memcpy of the same bytes (an echo: two memcpys), %% of its bandwidth: the median of "
                "21 alternating rounds of 8 calls and 8 memcpys (as many as move 1 MiB, below 128 KiB) "
                "[min-max]\n\n| mode |");
    for (size_t b : pairedSizes) std::printf(" %s |", human(static_cast<double>(b)).c_str());
    std::printf("\n|---|");
    for (size_t i = 0; i < pairedSizes.size(); ++i) std::printf("---|");
    std::printf("\n");
    for (const std::string& m : modes) {
      std::printf("| %s |", m.c_str());
      for (size_t b : pairedSizes) {
        auto r = std::find_if(paired.begin(), paired.end(),
                              [&](const PairedRatio& x) { return x.floor == "memcpy" && x.name == m && x.bytes == b; });
        if (r == paired.end()) {
          std::printf(" - |");
        } else if (!r->ok) {
          std::printf(" failed |");
        } else {
          std::printf(" %.0f%% [%.0f-%.0f%%] |", 100 * r->median, 100 * r->lo, 100 * r->hi);
        }
      }
      std::printf("\n");
    }
    std::printf("\n");
  }
  for (const PairedRatio& r : paired) {
    if (r.floor == "memcpy") continue;
    if (!r.ok) {
      std::printf("%s, paired: %s / %s: %s\n", human(static_cast<double>(r.bytes)).c_str(), r.name.c_str(),
                  r.floor.c_str(), r.failure.c_str());
      continue;
    }
    std::printf("%s, paired: %s / %s = %.0f%% [%.0f-%.0f%%] (median of 21 alternating rounds of 8 calls and 8 of the other)\n",
                human(static_cast<double>(r.bytes)).c_str(), r.name.c_str(), r.floor.c_str(), 100 * r.median,
                100 * r.lo, 100 * r.hi);
  }
}

int clientMain(const Config& cfg) {
  if (Status s = pinToCpu(kClientCpu); !s) std::fprintf(stderr, "lrpc_bulk_bench: %s (unpinned)\n", s.toString().c_str());
  std::vector<Curve> curves;
  std::vector<PairedRatio> paired;
  if (cfg.wants("memcpy")) {
    curves.push_back(memcpyCurve(cfg, "memcpy", 0, plainMemcpy));
    curves.push_back(memcpyCurve(cfg, "memcpy_d16", 16, plainMemcpy));
    curves.push_back(memcpyCurve(cfg, "bulkcopy_d16", 16, lrpc::detail::bulkCopy));
  }
  if (cfg.wants("local")) {
    for (Curve& c : localCurves(cfg, &paired)) curves.push_back(std::move(c));
  }
  if (cfg.wants("tcp") || cfg.wants("gso") || cfg.wants("udp") || cfg.wants("headers") || cfg.wants("net") ||
      cfg.wants("secure")) {
    NetnsPair ns;
    if (Status made = ns.create(); !made) {
      curves.push_back({"network", made.toString(), {}});
    } else {
      if (cfg.wants("tcp")) curves.push_back(tcpStream(cfg, ns));
      if (cfg.wants("gso")) curves.push_back(udpStream(cfg, ns, Stream::kGso));
      if (cfg.wants("udp")) curves.push_back(udpStream(cfg, ns, Stream::kPlain));
      if (cfg.wants("headers")) curves.push_back(udpStream(cfg, ns, Stream::kGsoHeaders));
      if (cfg.wants("net") || cfg.wants("secure")) {
        for (Curve& c : netCurves(cfg, ns, &paired)) curves.push_back(std::move(c));
      }
    }
  }
  report(curves, paired, cfg);
  double load[3] = {0, 0, 0};
  if (::getloadavg(load, 3) == 3) std::printf("Load average at the end: %.2f %.2f %.2f\n", load[0], load[1], load[2]);
  return 0;
}

}  // namespace
}  // namespace lrpc::bench

int main(int argc, char** argv) {
  using namespace lrpc::bench;
  if (argc >= 4 && std::strcmp(argv[1], "--server") == 0) {
    std::string kind = argv[2];
    int readyFd = std::atoi(argv[3]);
    if (kind == "tcp_sink") return serveTcpSink(readyFd);
    if (kind == "udp_gso_sink") return serveUdpGsoSink(readyFd);
    if (kind == "bulk_local") return serveLocal(readyFd, argc - 4, argv + 4);
    if (kind == "handoff_floor") return serveHandoffFloor(readyFd, argc - 4, argv + 4);
    if (kind == "bulk_net") return serveNet(readyFd, argc - 4, argv + 4);
    return 2;
  }
  Config cfg;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--budget-ms") cfg.budgetMs = std::atoi(argv[i + 1]);
    if (flag == "--max-mib") cfg.maxBytes = static_cast<size_t>(std::atoi(argv[i + 1])) << 20;
    if (flag == "--only") cfg.only = argv[i + 1];
    if (flag == "--net-mode") cfg.netMode = argv[i + 1];
  }
  return clientMain(cfg);
}
