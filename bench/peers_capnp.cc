// capnp_rpc: the four calls over Cap'n Proto RPC (see peers.h).
#include <capnp/any.h>
#include <capnp/ez-rpc.h>
#include <unistd.h>

#include <cstring>

#include "bench/capnp_peer.capnp.h"
#include "bench/peers.h"

namespace lrpc::bench {

namespace {

namespace cp = capnp_peer;

void toCapnp(const Blob200& in, cp::Bytes200::Builder out) {
  kj::ArrayPtr<capnp::byte> data = capnp::AnyStruct::Builder(kj::mv(out)).getDataSection();
  std::memcpy(data.begin(), &in, sizeof in);
}

bool fromCapnp(cp::Bytes200::Reader in, Blob200* out) {
  kj::ArrayPtr<const capnp::byte> data = capnp::AnyStruct::Reader(in).getDataSection();
  if (data.size() < sizeof *out) return false;
  std::memcpy(out, data.begin(), sizeof *out);
  return true;
}

class PaperImpl final : public cp::Paper::Server {
 protected:
  kj::Promise<void> null(NullContext) override { return kj::READY_NOW; }
  kj::Promise<void> add(AddContext context) override {
    auto params = context.getParams();
    context.getResults().setSum(params.getA() + params.getB());
    return kj::READY_NOW;
  }
  kj::Promise<void> bigIn(BigInContext context) override {
    fromCapnp(context.getParams().getData(), &mine_);
    benchmark::DoNotOptimize(mine_);
    return kj::READY_NOW;
  }
  kj::Promise<void> bigInOut(BigInOutContext context) override {
    fromCapnp(context.getParams().getData(), &mine_);
    Blob200 reply;
    bigInOutReply(mine_, &reply);
    toCapnp(reply, context.getResults().initData());
    return kj::READY_NOW;
  }

 private:
  Blob200 mine_{};
};

}  // namespace

struct CapnpRpc::Conn {
  explicit Conn(const std::string& path) : client("unix:" + path), paper(client.getMain<cp::Paper>()) {}
  capnp::EzRpcClient client;
  cp::Paper::Client paper;
};

CapnpRpc::CapnpRpc(std::unique_ptr<ServerProcess> server, std::unique_ptr<Conn> conn, std::string path) noexcept
    : server_(std::move(server)), conn_(std::move(conn)), path_(std::move(path)) {}

CapnpRpc::~CapnpRpc() {
  conn_.reset();
  server_.reset();
  unlink(path_.c_str());
}

Result<std::unique_ptr<CapnpRpc>> CapnpRpc::start(int serverCpu) {
  std::string path = socketPath("capnp");
  unlink(path.c_str());
  ServerSpec spec;
  spec.kind = "capnp_rpc";
  spec.args = {path};
  spec.cpu = serverCpu;
  Result<std::unique_ptr<ServerProcess>> server = ServerProcess::start(spec);
  if (!server) return server.status();
  std::unique_ptr<Conn> conn;
  KJ_IF_MAYBE(e, kj::runCatchingExceptions([&] { conn = std::make_unique<Conn>(path); })) {
    return Status(Errc::kIoError, "capnp connect: " + std::string(e->getDescription().cStr()));
  }
  return std::unique_ptr<CapnpRpc>(new CapnpRpc(std::move(server.value()), std::move(conn), path));
}

// A capnp call that fails throws a kj::Exception; here that is a failed call.
template <class F>
static bool guarded(F&& f) {
  bool ok = false;
  KJ_IF_MAYBE(e, kj::runCatchingExceptions([&] { ok = f(); })) {
    (void)e;
    return false;
  }
  return ok;
}

bool CapnpRpc::null() {
  return guarded([&] {
    conn_->paper.nullRequest().send().wait(conn_->client.getWaitScope());
    return true;
  });
}

bool CapnpRpc::add(int32_t a, int32_t b, int32_t* sum) {
  return guarded([&] {
    auto req = conn_->paper.addRequest();
    req.setA(a);
    req.setB(b);
    auto reply = req.send().wait(conn_->client.getWaitScope());
    *sum = reply.getSum();
    return true;
  });
}

bool CapnpRpc::bigIn(const Blob200& in) {
  return guarded([&] {
    auto req = conn_->paper.bigInRequest();
    toCapnp(in, req.initData());
    req.send().wait(conn_->client.getWaitScope());
    return true;
  });
}

bool CapnpRpc::bigInOut(const Blob200& in, Blob200* out) {
  return guarded([&] {
    auto req = conn_->paper.bigInOutRequest();
    toCapnp(in, req.initData());
    auto reply = req.send().wait(conn_->client.getWaitScope());
    return fromCapnp(reply.getData(), out);
  });
}

int serveCapnpRpc(int readyFd, int argc, char** argv) {
  if (argc < 1) return 2;
  capnp::EzRpcServer server(kj::heap<PaperImpl>(), std::string("unix:") + argv[0]);
  server.getPort().wait(server.getWaitScope());
  signalReady(readyFd);
  kj::NEVER_DONE.wait(server.getWaitScope());
}

}  // namespace lrpc::bench
