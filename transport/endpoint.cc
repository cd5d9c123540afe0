#include "transport/endpoint.h"

#include <cstdlib>
#include <cstring>

#include "runtime/base/log.h"
#include "transport/socket_endpoint.h"
#include "transport/uring_endpoint.h"

namespace lrpc::net {

Result<std::unique_ptr<Endpoint>> openUdpEndpoint(const EndpointOptions& options) {
  if (options.maxDatagram < kMinDatagram || options.maxDatagram > 65507) {
    return Status(Errc::kInvalidArgument, "maxDatagram must be in [128, 65507]");
  }
  const char* off = std::getenv("LRPC_NO_IO_URING");
  if (options.emulated || (off != nullptr && *off != '\0' && std::strcmp(off, "0") != 0)) {
    lrpc::detail::logOnce(LogTopic::kTransport, "io_uring disabled (LRPC_NO_IO_URING or options): using the emulated endpoint (recvmmsg/sendmmsg)");
    return SocketEndpoint::open(options);
  }
  auto ring = UringEndpoint::open(options);
  if (ring) return ring;
  if (ring.status().code() != Errc::kUnsupported) return ring.status();
  lrpc::detail::logOnce(LogTopic::kTransport, ("io_uring unavailable (" + ring.status().detail() +
                   "): using the emulated endpoint (recvmmsg/sendmmsg)").c_str());
  return SocketEndpoint::open(options);
}

}  // namespace lrpc::net
