// The server half of the UDP transport. One endpoint, one polling thread that also runs
// the handlers (as U-Net Active Messages run handlers in the polling thread): a call's
// arguments are dispatched straight from the receive buffer they arrived in. Many clients
// and sessions; each session keeps a reply cache of `window` slots so that a duplicate
// request is answered from the cache and every call executes at most once.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "runtime/stub_support.h"
#include "transport/buffer_shelf.h"
#include "transport/endpoint.h"
#include "transport/fragment.h"
#include "transport/fragment_batch.h"
#include "transport/wire.h"

namespace lrpc::net {

struct ServerOptions {
  ReceiveMode mode = ReceiveMode::kAdaptive;
  bool emulatedEndpoint = false;  // plain sockets even where io_uring works
  std::chrono::nanoseconds spinBeforeBlock = std::chrono::microseconds(50);
  uint32_t window = 32;          // largest call window granted per session
  size_t maxDatagram = kDefaultMaxDatagram;
  size_t maxMessageBytes = (64u << 20) + (1u << 20);  // largest request accepted
  uint32_t fragmentWindow = 1024;  // reply fragments in flight (<= kAckBits)
  uint32_t maxSessions = 4096;   // beyond this the least recently used session is dropped
  uint32_t receiveBuffers = 512;
  // Reply buffers of delivered calls kept for the next large reply (at most two per server,
  // each holding a payload of at most this size; see BufferShelf and ClientOptions). 0 keeps
  // none.
  size_t keepBufferBytes = 64u << 20;
};

class UdpServer {
 public:
  explicit UdpServer(ServerOptions options = {});
  ~UdpServer();  // stops the thread
  UdpServer(const UdpServer&) = delete;
  UdpServer& operator=(const UdpServer&) = delete;

  // Exports `server` (a Foo::Server*, as the generated dispatch expects) under `name`.
  // Only before start(). kAlreadyExists for a duplicate name.
  Status add(std::string_view name, const InterfaceDescriptor& iface, void* server);
  template <class Service>
  Status add(std::string_view name, typename Service::Server& impl) {
    return add(name, Service::kDescriptor, static_cast<typename Service::Server*>(&impl));
  }

  // Opens the UDP endpoint ("0.0.0.0:7000"; port 0 picks one) and returns the port.
  Result<uint16_t> bind(std::string_view address);
  // Or serve on an endpoint made elsewhere (the in-memory loopback in tests).
  void attach(std::unique_ptr<Endpoint> endpoint);
  // Serves on a thread of its own until stop() (or the destructor).
  Status start();
  void stop();
  // Or drive the loop from the caller's thread (instead of start()): waits up to `timeout`
  // for datagrams and handles them. Used by the packet fuzzer and single-threaded tests.
  Result<size_t> pollOnce(std::chrono::nanoseconds timeout) noexcept;

  NetAddress address() const noexcept;
  const char* endpointKind() const noexcept;
  // Calls executed so far (each distinct request at most once).
  uint64_t executed() const noexcept { return executed_.load(std::memory_order_relaxed); }
  size_t sessionCount() const noexcept { return sessionCount_.load(std::memory_order_relaxed); }

 private:
  struct Service {
    const InterfaceDescriptor* iface;
    void* server;
  };
  enum class SlotState : uint8_t { kEmpty, kReceiving, kDone, kDelivered };
  struct Slot {
    uint32_t seq = 0;
    SlotState state = SlotState::kEmpty;
    uint16_t procedure = 0;
    uint8_t status = 0;
    bool fragmentedReply = false;
    std::unique_ptr<MessageBuffer> request;  // reassembly of a fragmented request
    Reassembly reassembly;
    MessageBuffer reply;                     // the cached reply payload (results or error text)
    std::unique_ptr<KeptResult> kept;        // a large result value, sent in place of reply[keptAt, ...)
    size_t keptAt = 0;
    FragmentSender sender;
  };
  struct Session {
    uint32_t id;
    uint64_t cookie;
    uint64_t nonce;
    NetAddress peer;
    const Service* service;
    uint32_t window;
    size_t fragmentBytes;
    uint64_t lastActive;
    std::unique_ptr<Slot[]> slots;
  };
  class Sink;
  class Call;

  void run();
  void onDatagram(const Datagram& d) noexcept;
  void onHello(const Datagram& d, const Packet& p) noexcept;
  void onRequest(Session& s, const Packet& p) noexcept;
  void onAck(Session& s, const Packet& p) noexcept;
  void execute(Session& s, Slot& slot, std::span<const std::byte> frame) noexcept;
  enum class Resend { kNone, kHoles, kMissing };
  void sendReply(Session& s, Slot& slot, Resend resend) noexcept;
  void sendHeaderOnly(NetAddress to, PacketHeader h, std::span<const std::byte> payload) noexcept;
  void evictOldest();

  ServerOptions options_;
  std::map<std::string, Service, std::less<>> services_;
  std::unique_ptr<Endpoint> endpoint_;
  // Owned by the polling thread once started.
  std::unordered_map<uint32_t, Session> sessions_;
  std::unordered_map<uint64_t, uint32_t> byNonce_;  // client nonce -> session (duplicate hellos)
  uint32_t nextSession_ = 1;
  uint64_t tick_ = 0;
  MessageBuffer fixed_;  // result fixed part of the call being dispatched
  BufferShelf replyShelf_;
  std::vector<uint32_t> scratch_;
  FragmentBatch batch_;
  // The last large request's buffer, for the next one (in any slot or session): a client
  // streaming large calls costs no allocation, page faults or zeroing per call, and the
  // server holds at most one such buffer beyond those being reassembled.
  std::unique_ptr<MessageBuffer> spareRequest_;
  std::atomic<uint64_t> executed_{0};
  std::atomic<size_t> sessionCount_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace lrpc::net
