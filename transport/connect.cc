#include "transport/connect.h"

namespace lrpc {

Result<std::shared_ptr<Binding>> connectBinding(std::string_view target, const InterfaceDescriptor& iface,
                                                const ConnectOptions& options) {
  if (target.substr(0, 6) == "udp://" || target.substr(0, 12) == "udp+clear://") {
    return net::connect(target, iface, options.remote);
  }
  if (target.find("://") != std::string_view::npos) {
    return Status(Errc::kInvalidArgument, "unknown scheme in '" + std::string(target) + "' (udp://, udp+clear:// or a plain name)");
  }
  return importBinding(target, iface, options.local);
}

namespace net {

Status NetExporter::add(std::string_view name, const InterfaceDescriptor& iface, void* impl) {
  if (Status s = udp_.add(name, iface, impl); !s.isOk()) return s;
  return exporter_.add(name, iface, impl);
}

Result<uint16_t> NetExporter::start(std::string_view address) {
  auto port = udp_.bind(address);
  if (!port.isOk()) return port.status();
  if (Status s = udp_.start(); !s.isOk()) return s;
  return *port;
}

}  // namespace net
}  // namespace lrpc
