// grpc_uds: the four calls over gRPC's synchronous unary API (see peers.h).
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <cstring>

#include "bench/grpc_peer.grpc.pb.h"
#include "bench/peers.h"

namespace lrpc::bench {

namespace {

namespace gp = ::lrpc_bench;

class PaperImpl final : public gp::Paper::Service {
 public:
  grpc::Status Null(grpc::ServerContext*, const gp::Empty*, gp::Empty*) override { return grpc::Status::OK; }
  grpc::Status Add(grpc::ServerContext*, const gp::AddRequest* req, gp::AddReply* reply) override {
    reply->set_sum(req->a() + req->b());
    return grpc::Status::OK;
  }
  grpc::Status BigIn(grpc::ServerContext*, const gp::Bytes200* req, gp::Empty*) override {
    Blob200 mine;
    if (req->data().size() != sizeof mine) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "size");
    std::memcpy(&mine, req->data().data(), sizeof mine);
    benchmark::DoNotOptimize(mine);
    return grpc::Status::OK;
  }
  grpc::Status BigInOut(grpc::ServerContext*, const gp::Bytes200* req, gp::Bytes200* reply) override {
    Blob200 mine, out;
    if (req->data().size() != sizeof mine) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "size");
    std::memcpy(&mine, req->data().data(), sizeof mine);
    bigInOutReply(mine, &out);
    reply->set_data(&out, sizeof out);
    return grpc::Status::OK;
  }
};

}  // namespace

struct GrpcUds::Conn {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<gp::Paper::Stub> stub;
};

GrpcUds::GrpcUds(std::unique_ptr<ServerProcess> server, std::unique_ptr<Conn> conn, std::string path) noexcept
    : server_(std::move(server)), conn_(std::move(conn)), path_(std::move(path)) {}

GrpcUds::~GrpcUds() {
  conn_.reset();
  server_.reset();
  unlink(path_.c_str());
}

Result<std::unique_ptr<GrpcUds>> GrpcUds::start(int serverCpu) {
  std::string path = socketPath("grpc");
  unlink(path.c_str());
  ServerSpec spec;
  spec.kind = "grpc_uds";
  spec.args = {path};
  spec.cpu = serverCpu;
  Result<std::unique_ptr<ServerProcess>> server = ServerProcess::start(spec);
  if (!server) return server.status();
  auto conn = std::make_unique<Conn>();
  conn->channel = grpc::CreateChannel("unix:" + path, grpc::InsecureChannelCredentials());
  if (!conn->channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10))) {
    return Status(Errc::kIoError, "gRPC channel did not connect to unix:" + path);
  }
  conn->stub = gp::Paper::NewStub(conn->channel);
  return std::unique_ptr<GrpcUds>(new GrpcUds(std::move(server.value()), std::move(conn), path));
}

bool GrpcUds::null() {
  grpc::ClientContext ctx;
  gp::Empty req, reply;
  return conn_->stub->Null(&ctx, req, &reply).ok();
}

bool GrpcUds::add(int32_t a, int32_t b, int32_t* sum) {
  grpc::ClientContext ctx;
  gp::AddRequest req;
  gp::AddReply reply;
  req.set_a(a);
  req.set_b(b);
  if (!conn_->stub->Add(&ctx, req, &reply).ok()) return false;
  *sum = reply.sum();
  return true;
}

bool GrpcUds::bigIn(const Blob200& in) {
  grpc::ClientContext ctx;
  gp::Bytes200 req;
  gp::Empty reply;
  req.set_data(&in, sizeof in);
  return conn_->stub->BigIn(&ctx, req, &reply).ok();
}

bool GrpcUds::bigInOut(const Blob200& in, Blob200* out) {
  grpc::ClientContext ctx;
  gp::Bytes200 req, reply;
  req.set_data(&in, sizeof in);
  if (!conn_->stub->BigInOut(&ctx, req, &reply).ok() || reply.data().size() != sizeof *out) return false;
  std::memcpy(out, reply.data().data(), sizeof *out);
  return true;
}

int serveGrpcUds(int readyFd, int argc, char** argv) {
  if (argc < 1) return 2;
  PaperImpl service;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(std::string("unix:") + argv[0], grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) return 3;
  signalReady(readyFd);
  server->Wait();
  return 0;
}

}  // namespace lrpc::bench
