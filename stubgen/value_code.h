// The code that moves one value in and out of a frame, kind by kind: into and out of the fixed
// part, into and out of the tail, and into and out of a coded struct's fixed part. The emitters
// lay frames out and order the steps; what each kind needs at each step is here, so a new kind's
// copy code is written in this one file (with its C++ types in type_rules.cc). Every function
// appends generated text to `out`; `I` is the indentation of its lines.
#pragma once

#include <string>

#include "stubgen/model.h"

namespace lrpc::stubgen {

// How emitWrite (emit_parts.h) writes one side's values into a frame.
struct WriteSpec {
  std::string what;         // "Calc.add: argument" / "Calc.add: result"
  std::string tooBigCode;   // ::lrpc::Errc::kInvalidArgument / kServerFault
  std::string fixedBase;    // expression: std::byte* of the fixed part
  std::string reserveTail;  // "call_.argTail" / "call_.resultTail"
  bool fixedFirst;          // client: args() before argTail(); server: tail first
  std::string copyTail;     // copies one value into the tail: "call_.copyTail" (may stream) / "std::memcpy"
  bool moveTail = false;    // results: "call_.moveResultTail(dst, value)", which may take the value over
  std::string depth = "::lrpc::codec::kMaxDepth";  // levels a nested value may take (the reader's limit)
  // The id of a capability: this, then the Client's binding and ")" (runtime/capability.h).
  std::string capId;
};

// ---- A frame's fixed part ----
// Writes `f`'s slot of the fixed part at fixed_ (`v`: its value): the value itself, or for a
// variable one the VarRef of its place in the tail (<name>At_, and the length emitTailSize
// declared).
void emitFramePut(const Field& f, const std::string& v, const std::string& capId, const std::string& I,
                  std::string& out);
// The server: a fixed-size argument out of frame_, as the handler's argument (lines it needs
// first go to `out`).
std::string frameArg(const Field& f, std::string& out);
// The client: a fixed-size result out of frame_ into `target`.
void emitFrameResult(const Field& f, const std::string& target, std::string& out);

// ---- A frame's tail ----
// Declares <name>Bytes_, the tail bytes of variable `f` (value `v`), checking a coded one's
// depth first; for a List of Text or Data also <name>Len_, the bytes of its VarRef array.
void emitTailSize(const Field& f, const std::string& v, const WriteSpec& spec, const std::string& I,
                  std::string& out);
// Copies variable `f` (value `v`) into the reserved tail t_ at offset expression `at`.
void emitTailPut(const Field& f, const std::string& v, const std::string& at, const WriteSpec& spec,
                 const std::string& I, std::string& out);
// Reads the variable value named by `ref` (a VarRef already copied out of the frame) from
// `tail_` into `target`, after checking it lies inside the tail (and under maxBytes).
// `streamed`: the server reading arguments, which may still be arriving (awaitArgTail).
// `view` (server, Data only): a span set to the bytes, in place when the tail is private.
void emitReadVar(const Field& f, const std::string& ref, const std::string& target, const std::string& what,
                 int in, bool streamed, std::string& out, const std::string& view = "");
// The server: a variable argument read out of the tail (emitReadVar), as the handler's
// argument, a view of what was read.
std::string tailArg(const Field& f, const std::string& what, std::string& out);

// ---- A coded struct's fixed part (runtime/codec.h) ----
// One field's bytes into the fixed part f_ (values after it, from end_).
void emitCodecPut(const Field& f, const std::string& I, std::string& out);
// One field out of the fixed part f_ (n_ bytes of it were sent: a field past them keeps its
// default, as a newer reader of an older writer's frame must).
void emitCodecGet(const Field& f, const std::string& I, std::string& out);

}  // namespace lrpc::stubgen
