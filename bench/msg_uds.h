#pragma once
// msg_uds: a conventional message-passing RPC of the four calls over a Unix stream socket,
// the paper's "Taos" column. Unlike LRPC it marshals: the client stub encodes a header and
// each argument field by field into a message, the kernel copies the message through the
// socket, and on the server a dispatcher thread reads it, decodes the header, looks the
// method up in a table, decodes the arguments, calls the handler, encodes the reply and
// writes it back; the client then decodes the reply. Two copies through the kernel and
// two marshaling steps each way, as in the RPC systems LRPC was compared with.

#include <cstdint>
#include <memory>
#include <vector>

#include "bench/calls.h"
#include "bench/harness.h"

namespace lrpc::bench {

class MsgUds final : public Session {
 public:
  static Result<std::unique_ptr<MsgUds>> start(int serverCpu);
  ~MsgUds() override;

  bool null();
  bool add(int32_t a, int32_t b, int32_t* sum);
  bool bigIn(const Blob200& in);
  bool bigInOut(const Blob200& in, Blob200* out);
  const ServerProcess* server() const override { return server_.get(); }

 private:
  MsgUds(std::unique_ptr<ServerProcess> server, OwnedFd socket, std::string path) noexcept;
  // Sends the request whose body is encoded in out_ (the header is filled in here) and
  // reads the reply into in_ (its body at kHeaderSize, lastLen_ bytes in all).
  bool call(uint16_t method);

  std::unique_ptr<ServerProcess> server_;
  OwnedFd socket_;
  std::string path_;
  uint32_t nextId_ = 1;
  std::vector<uint8_t> out_;
  std::vector<uint8_t> in_;
  size_t inHave_ = 0;
  size_t lastLen_ = 0;
};

int serveMsgUds(int readyFd, int argc, char** argv);

}  // namespace lrpc::bench
