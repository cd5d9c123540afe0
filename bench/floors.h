#pragma once
// The raw floors: the same four calls with no framework at all, only the mechanism every
// RPC system here must pay for at least once per round trip.
//
//  floor_spin      two processes hand a request and a reply through shared memory, both
//                  busy-waiting (the LRPC/MP lower bound: cache lines moving between cores)
//  floor_futex     the same, but each side sleeps in FUTEX_WAIT and is woken by FUTEX_WAKE
//                  (the lower bound of any blocking same-host handoff)
//  floor_futex_samecore  floor_futex with both processes on one CPU (two context switches)
//  floor_udp       blocking UDP ping-pong between two network namespaces over a veth pair
//  floor_udp_busy  the same with non-blocking sockets that both sides busy-poll
//
// Every case copies the call's bytes each way: into the shared slot or the datagram on one
// side, out of it into private memory on the other.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "bench/calls.h"
#include "bench/harness.h"

namespace lrpc::bench {

struct ShmPingPong;  // the shared layout, in floors.cc

enum class WaitMode { kSpin, kBlock };

class ShmFloor final : public Session {
 public:
  // The largest message of the curves' echo and sink.
  static constexpr size_t kMaxBytes = 64 * 1024;

  static Result<std::unique_ptr<ShmFloor>> start(WaitMode mode, int serverCpu = kServerCpu);
  ~ShmFloor() override;

  bool null();
  bool add(int32_t a, int32_t b, int32_t* sum);
  bool bigIn(const Blob200& in);
  bool bigInOut(const Blob200& in, Blob200* out);
  // The curves (curves.h): `in` is copied into shared memory, the server copies it out, and
  // for echo copies it back, which the client copies into `out`.
  bool echo(std::span<const uint8_t> in, std::vector<uint8_t>* out);
  bool sink(std::span<const uint8_t> in);
  const ServerProcess* server() const override { return server_.get(); }

 private:
  ShmFloor(WaitMode mode, SharedMemory region, std::unique_ptr<ServerProcess> server);
  bool roundTrip(uint32_t op);

  WaitMode mode_;
  SharedMemory region_;
  std::unique_ptr<ServerProcess> server_;
  ShmPingPong* shm_;
  uint32_t seq_ = 0;
};

class UdpFloor final : public Session {
 public:
  // Server in `pair`'s server namespace, client socket in its client namespace.
  static Result<std::unique_ptr<UdpFloor>> start(WaitMode mode, const NetnsPair& pair);
  // floor_udp_pipelined: a busy-polling server that answers each batch of requests with one
  // recvmmsg and one sendmmsg, for nullPipelined.
  static Result<std::unique_ptr<UdpFloor>> startPipelined(const NetnsPair& pair);
  ~UdpFloor() override = default;

  bool null();
  bool add(int32_t a, int32_t b, int32_t* sum);
  bool bigIn(const Blob200& in);
  bool bigInOut(const Blob200& in, Blob200* out);
  // The curves (curves.h): a message of up to ShmFloor::kMaxBytes goes as datagrams of at
  // most one Ethernet payload each (a header and a chunk), with no acknowledgement or resend;
  // echo's reply comes back the same way, sink's is one small datagram.
  bool echo(std::span<const uint8_t> in, std::vector<uint8_t>* out);
  bool sink(std::span<const uint8_t> in);
  // Null/floor_udp_pipelined (async.h): `inFlight` Null datagrams kept in flight from this
  // thread, replies taken and requests sent in batches (recvmmsg, sendmmsg); one iteration
  // per reply.
  bool nullPipelined(benchmark::State& state, size_t inFlight);
  const ServerProcess* server() const override { return server_.get(); }

 private:
  // The server told `serverMode` (its argument: "busy", "block" or "pipelined") and a client
  // socket that waits for replies as `mode` says.
  static Result<std::unique_ptr<UdpFloor>> launch(const NetnsPair& pair, const char* serverMode, WaitMode mode);
  UdpFloor(WaitMode mode, std::unique_ptr<ServerProcess> server, OwnedFd socket) noexcept
      : mode_(mode), server_(std::move(server)), socket_(std::move(socket)) {}
  // Sends `len` bytes of buf_ and receives the reply into buf_; returns its length or -1.
  long roundTrip(size_t len);
  // Receives one datagram into buf_ (blocking or busy-polling, at most 2 s); length or -1.
  long receive();
  bool sendChunks(uint32_t op, std::span<const uint8_t> data);

  WaitMode mode_;
  std::unique_ptr<ServerProcess> server_;
  OwnedFd socket_;
  alignas(64) unsigned char buf_[2048];
};

// Server entry points (run in the exec'd child; see serverMain in main.cc).
int serveShmFloor(int readyFd, int argc, char** argv);
int serveUdpFloor(int readyFd, int argc, char** argv);

}  // namespace lrpc::bench
