// The schema's own types in generated code: enums, structs (flattened ones, and coded ones
// with their owning members, union accessors and groups; emit_struct.cc), their views
// (emit_view.cc) and the per-struct functions that runtime/codec.h calls to write and read coded
// structs inside a frame's tail (emit_codec.cc).
#pragma once

#include <string>
#include <vector>

#include "stubgen/model.h"

namespace lrpc::stubgen {

void emitEnum(const EnumDecl& e, int in, std::string& out);
// A comment line per reason, for what is left out of the header.
std::string reasonLines(const std::vector<std::string>& reasons, int in);
// `struct X;` for each of `structs` when one of them is coded: a coded struct's std::vector
// member may name a sibling declared after it.
void emitForwards(const std::vector<StructDecl>& structs, int in, std::string& out);
// `scope`: its name from the file's namespace ("Value", "Calc::Value"). Nested structs that
// must be defined after it (see emit_struct.cc) go to `after`, to be placed at namespace scope
// once the outermost declaration is closed; `head` names it there ("Value::Field").
void emitStruct(const StructDecl& s, int in, std::string& out, const std::string& scope, std::string* after,
                const std::string& head = "");
// The layout checks: the sizes and offsets the generator computed, which the compiler must
// agree with, or the frame is not the one the peer reads.
void emitLayoutAsserts(const std::string& cppName, uint32_t size, uint32_t align, const std::vector<Field>& fields,
                       std::string& out);
void emitStructAsserts(const StructDecl& s, std::string& out);
// A coded struct's union members, by discriminant.
std::vector<const Field*> unionMembers(const StructDecl& s);
// S::View for every coded struct among `structs`, once every struct is complete, in the order
// their by-value members need (runtime/codec_view.h); the functions that make their Data and
// List defaults go to `source`.
void emitViews(const std::vector<const StructDecl*>& structs, const std::string& cppNamespace, std::string& out,
               std::string& source);
// lrpcHead/lrpcSize/lrpcPut/lrpcGet for every coded struct among `structs` (nested ones too)
// and for its View, lrpcViewOf/lrpcOwnedOf between the two, lrpcScrub/lrpcFixBools for
// flattened ones with padding or Bools: declarations first, so that structs that refer to each
// other through Lists can call each other. The header (`out`) declares them; their definitions
// go to `source`, the generated source file, which alone includes runtime/codec.h.
void emitCodecFunctions(const std::vector<const StructDecl*>& structs, std::string& out, std::string& source);

// Defined in emit.cc: an interface's struct (frames, PDL, descriptor), for interfaces nested in
// structs as in interfaces; `indented` shifts such text into its enclosing declaration.
void emitInterfaceStruct(const InterfaceDecl& d, std::string& out);
std::string indented(const std::string& text, int in);
// Each of `interfaces`, indented by `in` spaces.
void emitNestedInterfaces(const std::vector<InterfaceDecl>& interfaces, int in, std::string& out);

}  // namespace lrpc::stubgen
