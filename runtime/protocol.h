// The binding protocol: fixed-size messages on a SOCK_SEQPACKET Unix socket (each message
// arrives whole or not at all), memfds passed with SCM_RIGHTS. The socket lives as long as
// the binding and is its liveness channel: either side sees POLLHUP when the other dies.
//
//   client                                   clerk (server)
//   Hello{iface id, signature hash, mode} -->
//                                         <-- Welcome{status, key, region bytes} + region memfd
//   Request{kStartThread, astack}         -->   (first use of an A-stack: start its thread)
//                                         <-- Reply{kThreadStarted, astack, status}
//   Request{kGrowArgs, astack, bytes}     -->   (argument tail larger than the A-stack)
//                                         <-- Reply{kArgSegment, astack, bytes} + memfd
//                                         <-- Reply{kResultSegment, astack, bytes} + memfd
//                                               (pushed by a server thread before it returns
//                                                a result tail larger than the A-stack)
//   Request{kCallbacks, astack = all ones}  -->  + one end of a socketpair: the client serves
//                                               objects of its own there (runtime/callbacks.h)
//                                         <-- Reply{kCallbacksReady, status} once the clerk has
//                                               imported the client's callback binding over it
// Every field is checked by the receiver; a malformed message ends the binding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "runtime/base/fd.h"
#include "runtime/base/status.h"
#include "runtime/contract.h"

namespace lrpc::detail {

inline constexpr uint32_t kHelloMagic = 0x4c525048;  // "HPRL"
inline constexpr size_t kDetailBytes = 384;

struct Hello {
  uint32_t magic;
  uint32_t version;
  uint64_t interfaceId;
  uint64_t signatureHash;
  uint32_t procedureCount;
  uint8_t mode;  // TransferMode
  uint8_t reserved[3];
  char interfaceName[96];  // for error messages only, NUL-padded
};

struct Welcome {
  uint8_t status;  // Errc
  uint8_t reserved[7];
  uint64_t key;
  uint64_t regionBytes;
  char detail[kDetailBytes];  // NUL-terminated when status != kOk
};

enum class MsgType : uint32_t {
  kStartThread = 1,
  kGrowArgs = 2,
  kThreadStarted = 3,
  kArgSegment = 4,
  kResultSegment = 5,
  kCallbacks = 6,
  kCallbacksReady = 7,
};
// The `astack` of kCallbacks and its reply: they belong to the binding, not to an A-stack.
inline constexpr uint32_t kBindingWide = UINT32_MAX;

struct Message {
  MsgType type;
  uint32_t astack;
  uint64_t bytes;
  uint8_t status;  // Errc (replies)
  uint8_t reserved[7];
};

static_assert(std::is_trivially_copyable_v<Hello> && std::is_trivially_copyable_v<Welcome> &&
              std::is_trivially_copyable_v<Message>);
static_assert(sizeof(Message) == 24);

// Sends one message, with `fd` attached when >= 0. MSG_NOSIGNAL: a dead peer is an error
// value, not SIGPIPE.
Status sendMessage(int sock, const void* data, size_t size, int fd = -1) noexcept;
// Receives one message of exactly `size` bytes (a shorter or longer one is kBadFrame), and
// the fd attached to it, if any. timeoutMs < 0 waits forever. A closed socket is kPeerDied.
Status recvMessage(int sock, void* data, size_t size, OwnedFd* fd, int timeoutMs) noexcept;

}  // namespace lrpc::detail
