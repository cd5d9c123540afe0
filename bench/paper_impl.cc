// The Paper server every lrpc column calls, in its own translation unit so that the `direct`
// column's call through Paper::Server stays a real virtual call (no LTO here).
#if LRPC_BENCH_DIRECT

#include <benchmark/benchmark.h>

#include <memory>

#include "paper.lrpc.h"  // lrpc_generate(lrpc_bench .../paper.capnp)

namespace lrpc::bench {

namespace {

// Not examples/paper/paper_impl.h: BigInOut here answers w0 + 1, as every peer of the table does
// (calls.h, bigInOutReply) and as the loops check, where the example echoes its argument, as
// the tests check. Safe to call from several threads at once: it keeps no state.
class PaperImpl final : public paper::Paper::Server {
 public:
  Status null() override { return {}; }
  Result<int32_t> add(int32_t a, int32_t b) override {
    return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));  // wraps: a peer picks a and b
  }
  Status bigIn(const paper::Bytes200& data) override {
    paper::Bytes200 mine = data;  // the server's own copy of the 200 bytes
    benchmark::DoNotOptimize(mine);
    return {};
  }
  Result<paper::Bytes200> bigInOut(const paper::Bytes200& data) override {
    paper::Bytes200 reply = data;
    reply.w0 += 1;
    return reply;
  }
};

}  // namespace

std::unique_ptr<paper::Paper::Server> makePaperImpl() { return std::make_unique<PaperImpl>(); }

}  // namespace lrpc::bench

#endif  // LRPC_BENCH_DIRECT
