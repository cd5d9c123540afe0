// Asking a running server about itself, for operators (`lrpc ls`, `lrpc ping`, `lrpc stat`).
//
// A query is a connection to a name's socket like an import, with the same credential checks
// on both sides, but its Hello carries kQueryMagic instead of an interface: the clerk answers
// with a Welcome, makes no A-stack region and counts no binding, and then serves:
//
//   client                                  clerk (server)
//   Hello{kQueryMagic}                  -->
//                                       <-- Welcome{status}
//   QueryRequest{kInfo}                 -->
//                                       <-- QueryInfo{interface, ExporterStats}
//   QueryRequest{kPing, mode}           -->   (once per query)
//                                       <-- QueryPingReply{status, bytes} + memfd
//
// kPing sets up one built-in A-stack (a control block in its own sealed memfd) with a server
// thread of its own in the server process. A ping is then a Null call on the runtime's real
// control-transfer path: the client rings the call doorbell, the server thread wakes (spin,
// futex or adaptive, as asked), rings the return doorbell, and the client wakes. It measures
// everything a Null call costs except the generated stub and dispatch (a few nanoseconds),
// and it never runs the user's handlers. The thread ends with the query connection.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/exporter.h"
#include "runtime/base/status.h"
#include "runtime/transfer.h"

namespace lrpc {

struct QueryOptions {
  // Where names live (runtime/names.h); empty: the default directory.
  std::string dir;
  // How long to wait for each answer.
  std::chrono::milliseconds timeout = std::chrono::seconds(2);
  // Server uids we accept besides our own and root.
  std::vector<uid_t> trustUids;
};

struct ServerInfo {
  std::string name;
  pid_t pid = 0;             // the serving process (SO_PEERCRED)
  uid_t uid = 0;
  std::string interfaceName;  // "paper.capnp:Paper"
  uint64_t interfaceId = 0;
  uint64_t signatureHash = 0;
  uint32_t procedureCount = 0;
  uint64_t nameBindings = 0;  // clients bound to this name now
  ExporterStats stats;        // of the whole exporting process (every name it serves)
};

// The names that have a socket in the directory, sorted; live or left by a dead server.
Result<std::vector<std::string>> listNames(const QueryOptions& options = {});

// Asks the server of `name` what it serves and its counters. kNotFound: no such name, or
// its server is dead (the socket is left but nobody listens).
// `partial`, when given, gets the name, pid and uid as soon as they are known, so that a
// refused query (another user's server) still says who serves the name.
Result<ServerInfo> queryServer(std::string_view name, const QueryOptions& options = {}, ServerInfo* partial = nullptr);

// Null-like round trips to the server of `name` over a built-in A-stack (see above).
class Pinger {
 public:
  static Result<std::unique_ptr<Pinger>> open(std::string_view name, TransferMode mode,
                                              const QueryOptions& options = {});
  ~Pinger();
  Pinger(const Pinger&) = delete;
  Pinger& operator=(const Pinger&) = delete;

  // One round trip; its time. kPeerDied when the server went away, kDeadlineExceeded after
  // `timeout` without an answer.
  Result<std::chrono::nanoseconds> ping(std::chrono::nanoseconds timeout);
  const ServerInfo& info() const noexcept;

  struct Impl;

 private:
  explicit Pinger(std::unique_ptr<Impl> impl) noexcept;
  std::unique_ptr<Impl> impl_;
};

namespace detail {

inline constexpr uint32_t kQueryMagic = 0x4c525051;  // "QPRL"

enum class QueryType : uint32_t { kInfo = 1, kPing = 2 };

struct QueryRequest {
  QueryType type;
  uint8_t mode;  // kPing: TransferMode of the server thread
  uint8_t reserved[11];
};

struct QueryInfo {
  uint8_t status;  // Errc
  uint8_t reserved[3];
  uint32_t procedureCount;
  uint64_t interfaceId;
  uint64_t signatureHash;
  char interfaceName[128];  // NUL-terminated
  uint64_t nameBindings;  // live bindings of this name
  // ExporterStats, field by field, so that the wire does not follow that struct's changes.
  uint64_t bindingsLive, bindingsTotal, bindingsRejected, serverThreads, callsServed, callErrors;
};

struct QueryPingReply {
  uint8_t status;  // Errc
  uint8_t reserved[7];
  uint64_t bytes;  // size of the memfd attached
};

static_assert(sizeof(QueryRequest) == 16 && sizeof(QueryPingReply) == 16 && sizeof(QueryInfo) == 208);

// What the clerk needs to answer queries about one exported name.
struct QueryTarget {
  const InterfaceDescriptor* iface;
  std::function<ExporterStats()> stats;
  std::function<uint64_t()> nameBindings;
};

// The clerk's side, after it accepted a query Hello (credentials checked): sends the Welcome
// and answers requests until the client hangs up, breaks the protocol, or `stopFd` (an
// eventfd) becomes readable. Joins the ping thread before it returns.
void serveQueries(int sock, int stopFd, const QueryTarget& target) noexcept;

}  // namespace detail
}  // namespace lrpc
