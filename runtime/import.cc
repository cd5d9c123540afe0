#include "runtime/import.h"

#include <cstdio>
#include <cstring>

#include "runtime/astack.h"
#include "runtime/local_binding.h"
#include "runtime/base/log.h"
#include "runtime/names.h"
#include "runtime/protocol.h"
#include "runtime/shm.h"

namespace lrpc {

Result<std::shared_ptr<Binding>> importBinding(std::string_view name, const InterfaceDescriptor& iface,
                                               const ImportOptions& options) {
  Result<OwnedFd> sock = detail::connectName(name, options.dir, options.trustUids);
  if (!sock.isOk()) return sock.status();
  return detail::importOverSocket(std::move(*sock), name, iface, options);
}

namespace detail {

Result<std::shared_ptr<Binding>> importOverSocket(OwnedFd sock, std::string_view name, const InterfaceDescriptor& iface,
                                                  const ImportOptions& options) {
  Result<RegionLayout> layout = RegionLayout::compute(iface);
  if (!layout.isOk()) return layout.status();
  detail::Hello hello{};
  hello.magic = detail::kHelloMagic;
  hello.version = kVersion;
  hello.interfaceId = iface.id;
  hello.signatureHash = iface.signatureHash;
  hello.procedureCount = iface.procedureCount;
  hello.mode = static_cast<uint8_t>(options.mode);
  std::snprintf(hello.interfaceName, sizeof hello.interfaceName, "%s", iface.name ? iface.name : "?");
  // A failed send is not final: a server that refused us may have closed after writing why.
  Status sent = detail::sendMessage(sock.get(), &hello, sizeof hello);

  detail::Welcome welcome{};
  OwnedFd regionFd;
  Status s = detail::recvMessage(sock.get(), &welcome, sizeof welcome, &regionFd,
                                 static_cast<int>(options.bindTimeout.count()));
  if (!s.isOk()) {
    if (!sent.isOk()) return sent;
    if (s.code() == Errc::kPeerDied) return Status(Errc::kBindingRejected, "server closed the binding socket");
    return s;
  }
  if (welcome.status != 0) {
    welcome.detail[sizeof welcome.detail - 1] = '\0';
    const Errc code = errcFromWire(welcome.status);
    detail::logf(LogTopic::kErrors, "import \"%.*s\" refused: %s", static_cast<int>(name.size()), name.data(),
                 welcome.detail);
    return Status(code, detail::wireDetail(welcome.detail, std::strlen(welcome.detail)));
  }
  if (welcome.regionBytes != layout->regionBytes()) {
    return Status(Errc::kBindingRejected, "server's A-stack region has another layout");
  }
  Result<SharedMemory> region = SharedMemory::adopt(std::move(regionFd), welcome.regionBytes);
  if (!region.isOk()) return region.status();
  RegionHeader header;
  std::memcpy(&header, region->data(), sizeof header);
  if (header.magic != kRegionMagic || header.version != kVersion || header.interfaceId != iface.id ||
      header.signatureHash != iface.signatureHash || header.astackCount != layout->astackCount()) {
    return Status(Errc::kBindingRejected, "A-stack region header does not match the interface");
  }
  auto local = std::make_shared<LocalBinding>(iface, std::move(*layout), std::move(*region), std::move(sock),
                                              welcome.key, options.mode, options.astackWait);
  LocalBinding* raw = local.get();
  detail::logf(LogTopic::kBinding, "imported \"%.*s\" (%s, %s mode)", static_cast<int>(name.size()), name.data(),
               iface.name ? iface.name : "?", std::string(transferModeName(options.mode)).c_str());
  return std::make_shared<Binding>(iface, raw, std::move(local));
}

}  // namespace detail
}  // namespace lrpc
