// The Call concept: what generated client code needs of a call path, and so what the message
// path (RemoteCall, runtime/remote_call.h) and the A-stack path (LocalCall,
// runtime/local_call.h) both provide. A generated stub's copy code is a template over it,
// compiled once per path.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/contract.h"

namespace lrpc {

namespace detail {
// Copies the bytes `ref` names (checked against `tail` already) into `out`: assign, one pass,
// where resize and memcpy would zero them first.
inline void copyBytes(std::span<const std::byte> tail, VarRef ref, std::vector<uint8_t>& out) {
  const auto* p = reinterpret_cast<const uint8_t*>(tail.data() + ref.offset);
  out.assign(p, p + ref.length);
}
}  // namespace detail

// The contract between generated client code and a path: exactly these members, used in this
// order, on a RemoteCall (below, the message path) or a LocalCall (local_call.h, A-stacks):
//   status()        why the call could not start (no A-stack, dead peer), else ok
//   binding()       the binding the call goes through (capabilities in its frames name its tables)
//   args()          the fixed argument part, argsSize bytes, zeroed
//   argTail(n)      reserve n contiguous tail bytes (at most once per call); their old
//                   contents are unspecified: generated code writes every byte, gaps included
//   resultTailApart(value)  (before invoke, only where the sole variable-size result is Data)
//                   the result tail may arrive apart from the frame, straight into `value`,
//                   the vector that will hold that result; see takeResultBytes
//   invoke()        transfer control and wait for the result or an error
//   results()       the fixed result part, resultsSize bytes (valid after an ok invoke)
//   resultTail()    the result tail as the server wrote it (bounded, but unchecked content)
//   takeResultBytes(tail, ref, out)  sets `out` to the Data value `ref` names in `tail`
//                   (resultTail(), ref checked against it): a copy, or, where the tail arrived
//                   apart in `out` itself, `out` cut to the value
// plus copyTail(dst, src, n), which writes one value into the reserved tail.
template <class C>
concept Call = requires(C& call, const C& ccall, size_t n, std::byte* dst, const void* src,
                        std::span<const std::byte> tail, VarRef ref, std::vector<uint8_t>& out) {
  { ccall.status() } -> std::convertible_to<const Status&>;
  { ccall.binding() } -> std::same_as<const Binding&>;
  { call.args() } -> std::same_as<std::byte*>;
  { call.argTail(n) } -> std::same_as<Result<std::span<std::byte>>>;
  call.copyTail(dst, src, n);
  call.resultTailApart(out);
  { call.invoke() } -> std::same_as<Status>;
  { ccall.results() } -> std::same_as<const std::byte*>;
  { ccall.resultTail() } -> std::same_as<std::span<const std::byte>>;
  call.takeResultBytes(tail, ref, out);
};

}  // namespace lrpc
