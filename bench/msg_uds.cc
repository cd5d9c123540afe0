#include "bench/msg_uds.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

namespace lrpc::bench {

namespace {

// The message: a 16-byte header, then the body (the encoded arguments or results).
//   magic u32 | call id u32 | method u16 | status u16 | body length u32
constexpr uint32_t kMagic = 0x504d524c;  // "LRMP"
constexpr size_t kHeaderSize = 16;
constexpr size_t kMaxBody = 4096;
enum Method : uint16_t { kNull = 0, kAdd = 1, kBigIn = 2, kBigInOut = 3, kMethodCount = 4 };

// Little-endian field-by-field encoding, the way a conventional stub marshals.
class Encoder {
 public:
  explicit Encoder(std::vector<uint8_t>& buf) : buf_(buf) { buf_.resize(kHeaderSize); }
  void u16(uint16_t v) { for (int i = 0; i < 2; ++i) buf_.push_back(static_cast<uint8_t>(v >> (8 * i))); }
  void u32(uint32_t v) { for (int i = 0; i < 4; ++i) buf_.push_back(static_cast<uint8_t>(v >> (8 * i))); }
  void u64(uint64_t v) { for (int i = 0; i < 8; ++i) buf_.push_back(static_cast<uint8_t>(v >> (8 * i))); }
  void i32(int32_t v) { u32(static_cast<uint32_t>(v)); }
  void blob(const Blob200& b) { for (uint64_t w : b.w) u64(w); }
  std::vector<uint8_t>& buf_;
};

// Fills in the header once the body is in the buffer.
void finishMessage(std::vector<uint8_t>& buf, uint32_t id, uint16_t method, uint16_t status) {
  auto put = [&buf](size_t at, uint32_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) buf[at + i] = static_cast<uint8_t>(v >> (8 * i));
  };
  put(0, kMagic, 4);
  put(4, id, 4);
  put(8, method, 2);
  put(10, status, 2);
  put(12, static_cast<uint32_t>(buf.size() - kHeaderSize), 4);
}

class Decoder {
 public:
  Decoder(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  bool ok() const { return ok_; }
  uint16_t u16() { return static_cast<uint16_t>(take(2)); }
  uint32_t u32() { return static_cast<uint32_t>(take(4)); }
  uint64_t u64() { return take(8); }
  int32_t i32() { return static_cast<int32_t>(u32()); }
  void blob(Blob200* b) { for (uint64_t& w : b->w) w = u64(); }

 private:
  uint64_t take(size_t k) {
    if (at_ + k > n_) {
      ok_ = false;
      return 0;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < k; ++i) v |= static_cast<uint64_t>(p_[at_ + i]) << (8 * i);
    at_ += k;
    return v;
  }
  const uint8_t* p_;
  size_t n_;
  size_t at_ = 0;
  bool ok_ = true;
};

struct Header {
  uint32_t magic, id;
  uint16_t method, status;
  uint32_t body;
};

Header decodeHeader(const uint8_t* p) {
  Decoder d(p, kHeaderSize);
  Header h;
  h.magic = d.u32();
  h.id = d.u32();
  h.method = d.u16();
  h.status = d.u16();
  h.body = d.u32();
  return h;
}

// Reads one whole message into buf (which keeps any bytes of the next one); returns false
// on EOF or a malformed header. `have` counts the buffered bytes; `len` is set to the
// message's total length.
bool readMessage(int fd, std::vector<uint8_t>& buf, size_t& have, size_t& len) {
  if (buf.size() < kHeaderSize + kMaxBody) buf.resize(kHeaderSize + kMaxBody);
  for (;;) {
    if (have >= kHeaderSize) {
      Header h = decodeHeader(buf.data());
      if (h.magic != kMagic || h.body > kMaxBody) return false;
      len = kHeaderSize + h.body;
      if (have >= len) return true;
    }
    ssize_t r = read(fd, buf.data() + have, buf.size() - have);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    have += static_cast<size_t>(r);
  }
}

// Drops the first `len` bytes of the buffer (the message just handled).
void consume(std::vector<uint8_t>& buf, size_t& have, size_t len) {
  if (have > len) std::memmove(buf.data(), buf.data() + len, have - len);
  have -= len;
}

// The server's procedures, behind the dispatch table.
class PaperHandler {
 public:
  void null() {}
  int32_t add(int32_t a, int32_t b) { return a + b; }
  void bigIn(const Blob200& in) {
    mine_ = in;
    benchmark::DoNotOptimize(mine_);
  }
  void bigInOut(const Blob200& in, Blob200* out) {
    mine_ = in;
    bigInOutReply(mine_, out);
  }

 private:
  Blob200 mine_{};
};

// Server stubs: decode the arguments, call the handler, encode the results.
using ServerStub = bool (*)(PaperHandler&, Decoder&, Encoder&);
constexpr std::array<ServerStub, kMethodCount> kStubs = {
    [](PaperHandler& h, Decoder&, Encoder&) {
      h.null();
      return true;
    },
    [](PaperHandler& h, Decoder& d, Encoder& e) {
      int32_t a = d.i32();
      int32_t b = d.i32();
      if (!d.ok()) return false;
      e.i32(h.add(a, b));
      return true;
    },
    [](PaperHandler& h, Decoder& d, Encoder&) {
      Blob200 in;
      d.blob(&in);
      if (!d.ok()) return false;
      h.bigIn(in);
      return true;
    },
    [](PaperHandler& h, Decoder& d, Encoder& e) {
      Blob200 in, out;
      d.blob(&in);
      if (!d.ok()) return false;
      h.bigInOut(in, &out);
      e.blob(out);
      return true;
    },
};

// The dispatcher thread of one connection.
void dispatchLoop(int fd) {
  PaperHandler handler;
  std::vector<uint8_t> in, out;
  size_t have = 0, len = 0;
  while (readMessage(fd, in, have, len)) {
    Header h = decodeHeader(in.data());
    Decoder args(in.data() + kHeaderSize, h.body);
    Encoder results(out);
    bool ok = h.method < kMethodCount && kStubs[h.method](handler, args, results);
    if (!ok) out.resize(kHeaderSize);
    finishMessage(out, h.id, h.method, ok ? 0 : 1);
    consume(in, have, len);
    if (!writeFull(fd, out.data(), out.size())) break;
  }
  close(fd);
}

}  // namespace

MsgUds::MsgUds(std::unique_ptr<ServerProcess> server, OwnedFd socket, std::string path) noexcept
    : server_(std::move(server)), socket_(std::move(socket)), path_(std::move(path)) {}

MsgUds::~MsgUds() {
  socket_ = OwnedFd();
  server_.reset();
  unlink(path_.c_str());
}

Result<std::unique_ptr<MsgUds>> MsgUds::start(int serverCpu) {
  std::string path = socketPath("msg");
  unlink(path.c_str());
  ServerSpec spec;
  spec.kind = "msg_uds";
  spec.args = {path};
  spec.cpu = serverCpu;
  Result<std::unique_ptr<ServerProcess>> server = ServerProcess::start(spec);
  if (!server) return server.status();
  OwnedFd sock(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!sock.valid()) return Status::fromErrno(errno, "socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  if (connect(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return Status::fromErrno(errno, "connect " + path);
  }
  return std::unique_ptr<MsgUds>(new MsgUds(std::move(server.value()), std::move(sock), path));
}

bool MsgUds::call(uint16_t method) {
  uint32_t id = nextId_++;
  finishMessage(out_, id, method, 0);
  if (!writeFull(socket_.get(), out_.data(), out_.size())) return false;
  if (lastLen_ > 0) consume(in_, inHave_, lastLen_);
  lastLen_ = 0;
  size_t len = 0;
  if (!readMessage(socket_.get(), in_, inHave_, len)) return false;
  lastLen_ = len;
  Header h = decodeHeader(in_.data());
  return h.id == id && h.method == method && h.status == 0;
}

bool MsgUds::null() {
  Encoder args(out_);
  return call(kNull);
}

bool MsgUds::add(int32_t a, int32_t b, int32_t* sum) {
  Encoder args(out_);
  args.i32(a);
  args.i32(b);
  if (!call(kAdd)) return false;
  Decoder results(in_.data() + kHeaderSize, lastLen_ - kHeaderSize);
  *sum = results.i32();
  return results.ok();
}

bool MsgUds::bigIn(const Blob200& in) {
  Encoder args(out_);
  args.blob(in);
  return call(kBigIn);
}

bool MsgUds::bigInOut(const Blob200& in, Blob200* out) {
  Encoder args(out_);
  args.blob(in);
  if (!call(kBigInOut)) return false;
  Decoder results(in_.data() + kHeaderSize, lastLen_ - kHeaderSize);
  results.blob(out);
  return results.ok();
}

int serveMsgUds(int readyFd, int argc, char** argv) {
  if (argc < 1) return 2;
  OwnedFd listener(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listener.valid()) return 3;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, argv[0], sizeof addr.sun_path - 1);
  if (bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return 4;
  if (listen(listener.get(), 16) != 0) return 5;
  signalReady(readyFd);
  for (;;) {
    int fd = accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      return 6;
    }
    std::thread(dispatchLoop, fd).detach();
  }
}

}  // namespace lrpc::bench
