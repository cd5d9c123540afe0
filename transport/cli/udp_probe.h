// The network form of `lrpc ping udp://host:port/name`: a session Hello that asks for no
// interface (id 0), which the server's polling thread looks up and refuses with the name's
// real interface, or with kNotFound. One probe is one round trip through the network and
// the thread that also runs the server's handlers; the server opens no session and keeps
// no state for it. It needs no schema, so it works on any exported name.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "runtime/base/status.h"

namespace lrpc::cli {

class UdpProbe {
 public:
  // Parses the URI (udp:// or udp+clear://) and opens a UDP socket connected to the server.
  // kUnsupported for an address with ?key=: the probe is clear text.
  static Result<std::unique_ptr<UdpProbe>> open(std::string_view uri);
  ~UdpProbe();
  UdpProbe(const UdpProbe&) = delete;
  UdpProbe& operator=(const UdpProbe&) = delete;

  // One round trip. Ok when the server answered for the name (the answer's text, which names
  // its interface, is kept in lastAnswer()); kNotFound when it serves no such name;
  // kDeadlineExceeded when nothing came back in time.
  Result<std::chrono::nanoseconds> probe(std::chrono::nanoseconds timeout);
  const std::string& lastAnswer() const noexcept { return answer_; }
  const std::string& server() const noexcept { return server_; }
  const std::string& name() const noexcept { return name_; }

 private:
  UdpProbe(int fd, std::string server, std::string name) noexcept;

  int fd_;
  std::string server_;
  std::string name_;
  std::string answer_;
};

}  // namespace lrpc::cli
