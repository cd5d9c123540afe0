// The paper's four procedures, served for real: BigIn and BigInOut copy their 200 bytes, as a
// server that used its argument would. Stateless, so one instance serves any number of
// threads at once. Used by examples/paper/paper_server.cc, and usable by bench/ and tests.
#pragma once

#include <cstdint>

#include "paper.lrpc.h"  // lrpc_generate(<target> examples/paper/paper.capnp)

namespace lrpc::paper {

class PaperImpl final : public Paper::Server {
 public:
  Status null() override { return {}; }
  Result<int32_t> add(int32_t a, int32_t b) override {
    // Wraps instead of overflowing (signed overflow is undefined; the bench adds big numbers).
    return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
  }
  Status bigIn(const Bytes200& data) override {
    Bytes200 mine = data;  // the server's own copy of the argument
    keep(mine);
    return {};
  }
  Result<Bytes200> bigInOut(const Bytes200& data) override {
    Bytes200 reply = data;  // copied, then returned: 200 bytes each way
    return reply;
  }

 private:
  // Keeps the copy from being optimized away (what benchmark::DoNotOptimize does), with no
  // shared state: several server threads run handlers at once.
  static void keep(const Bytes200& b) { asm volatile("" : : "r"(&b) : "memory"); }
};

}  // namespace lrpc::paper
