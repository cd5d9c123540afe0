#pragma once
// The RPC systems lrpc is compared with, from Debian's packages, each serving the four calls
// from a forked server process over a Unix socket:
//
//  capnp_rpc  Cap'n Proto RPC (capnp::EzRpcServer / EzRpcClient, "unix:PATH"), schema
//             bench/capnp_peer.capnp compiled by capnp's own C++ plugin
//  grpc_uds   gRPC unary calls over "unix:PATH" with the synchronous API, schema
//             bench/grpc_peer.proto compiled by protoc and grpc_cpp_plugin
//
// The client classes hide the libraries behind a pointer so that only peers_*.cc include
// their headers.

#include <cstdint>
#include <memory>
#include <string>

#include "bench/calls.h"
#include "bench/harness.h"

namespace lrpc::bench {

class CapnpRpc final : public Session {
 public:
  static Result<std::unique_ptr<CapnpRpc>> start(int serverCpu);
  ~CapnpRpc() override;

  bool null();
  bool add(int32_t a, int32_t b, int32_t* sum);
  bool bigIn(const Blob200& in);
  bool bigInOut(const Blob200& in, Blob200* out);
  const ServerProcess* server() const override { return server_.get(); }

  struct Conn;  // the EzRpcClient and the Paper capability

 private:
  CapnpRpc(std::unique_ptr<ServerProcess> server, std::unique_ptr<Conn> conn, std::string path) noexcept;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Conn> conn_;
  std::string path_;
};

class GrpcUds final : public Session {
 public:
  static Result<std::unique_ptr<GrpcUds>> start(int serverCpu);
  ~GrpcUds() override;

  bool null();
  bool add(int32_t a, int32_t b, int32_t* sum);
  bool bigIn(const Blob200& in);
  bool bigInOut(const Blob200& in, Blob200* out);
  const ServerProcess* server() const override { return server_.get(); }

  struct Conn;  // the channel and the stub

 private:
  GrpcUds(std::unique_ptr<ServerProcess> server, std::unique_ptr<Conn> conn, std::string path) noexcept;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Conn> conn_;
  std::string path_;
};

int serveCapnpRpc(int readyFd, int argc, char** argv);
int serveGrpcUds(int readyFd, int argc, char** argv);

}  // namespace lrpc::bench
