// What the parts of the emitter share (emit.cc lists them): the C++ spelling of a method's
// signatures, the copy code both sides generate, and each side's classes. Internal to the
// generator; every function appends generated text to `out` or returns it.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "stubgen/model.h"
#include "stubgen/value_code.h"

namespace lrpc::stubgen {

// ---- Signatures (emit_interface.cc) ----
// `withDefaults`: the client's public methods, where the schema's defaults of the trailing
// parameters become C++ default arguments (C++ allows them only there).
std::string paramList(const Method& m, bool withDefaults = false);
std::string argNames(const Method& m);  // ", a, b"
std::string returnType(const Method& m);
// What a $Lrpc.deferred handler's Reply carries: the value its Result would hold.
std::string replyValue(const Method& m);
std::string replyType(const Method& m);
// A handler's declaration after its name: "(params) -> Result" or, deferred, "(params, Reply&&)".
std::string handlerSignature(const Method& m);
// Several results, one of them a capability.
bool holdsCapability(const Method& m);
// `complete`: the interfaces whose Client class is defined above this point.
void emitResultsStruct(const Method& m, const std::string& name, int in, const std::set<std::string>& complete,
                       std::string& out);

// ---- Copy code (emit_copy.cc) ----
// The Reader's nesting limit: $Lrpc.maxDepth, else the codec's default.
std::string depthArg(const Method& m);
bool anyCoded(const std::vector<Field>& fields);
bool anyInterface(const std::vector<Field>& fields);
// Writes `fields`, whose values are `valueOf(field)`, into a frame: fixed values by memcpy at
// their constant offsets, variable ones into one tail reservation at 8-byte aligned offsets.
void emitWrite(const std::vector<Field>& fields, uint32_t frameSize,
               const std::function<std::string(const Field&)>& valueOf, const WriteSpec& spec, int in,
               std::string& out);
// Where the Bools of `fields` sit in the frame (each checked to be 0 or 1 on receipt).
std::vector<uint32_t> frameBoolOffsets(const std::vector<Field>& fields);

// ---- Client (emit_client.cc) ----
// The class goes to `out` (the header) and its methods' definitions to `defs` (the source file,
// where every Client class is complete, so a method may return one defined after its own).
void emitClientClass(const InterfaceDecl& d, std::string& out, std::string& defs);
// A method's client copy code in two halves, In_ and Out_, and Via, the synchronous call.
void emitClientVia(const InterfaceDecl& d, const Method& m, std::string& out);
bool usesCaps(const Method& m);
// The parameter list of a method's copy halves (In_ when `in`).
std::string halfParams(const Method& m, bool in);

// ---- Server (emit_server.cc) ----
void emitServerClass(const InterfaceDecl& d, std::string& out);
void emitDispatchMethod(const InterfaceDecl& d, const Method& m, std::string& out);
// A deferred method's results are written when its Reply is sent, by this function.
void emitDeferredWriter(const InterfaceDecl& d, const Method& m, std::string& out);
// The name of the generated class that forwards d's calls ("Forwarder_calc_Calc").
std::string forwarderName(const InterfaceDecl& d);
// A Server that calls the same method on a Client of another binding (a proxy).
void emitForwarder(const InterfaceDecl& d, std::string& out);
// Per other base: a base::Server whose every method calls d's Client, and the conversions.
void emitBaseAdaptors(const InterfaceDecl& d, std::string& out);
void emitBaseConversions(const InterfaceDecl& d, std::string& out);
void emitServerDispatch(const InterfaceDecl& d, std::string& out);

}  // namespace lrpc::stubgen
