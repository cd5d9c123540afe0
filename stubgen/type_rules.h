// What each kind of value is in generated code, answered per kind in one place: how it is
// spelled in C++ (a frame slot, a struct member, a parameter, a result, a view), where it sits in
// a frame, what it needs declared before it, and which of its bytes are Bools or padding. The
// emitters ask these questions and never test a Kind themselves; the code that moves a value in
// and out of a frame is in value_code.h. The scalar kinds' own facts are their rows in kinds.h.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "stubgen/model.h"

namespace lrpc::stubgen {

// ---- What a value is (type_rules.cc) ----
// Whether a value sits in a frame's tail (named by a VarRef) rather than in its fixed part.
bool isVariable(const Type& t);
// A capability: a uint32 id in the frame, a Client in C++.
bool isCapability(const Type& t);
// Data: the value is its tail bytes as they are, so a server may read it in place and a client
// may be handed a tail that arrived apart.
bool isBytes(const Type& t);
// Text, Data and Lists: a C++ container, empty until it is given a value.
bool startsEmpty(const Type& t);
// The bytes a value of kind `k` other than a struct takes in a frame (also its alignment).
uint32_t fixedSize(Kind k);
// A List element as a Type of its own.
Type elemOf(const Type& list);

// ---- C++ spelling (type_rules.cc) ----
// How a value sits in a frame's fixed part (and a List element in the tail).
std::string frameType(const Type& t);
// A member of a generated struct: an owning value (std::string, std::vector, ...).
std::string memberType(const Type& t);
// A parameter (client and handler): views where the value is variable-size.
std::string paramType(const Type& t);
std::string elemParamType(const Type& e);
// What a client receives and a handler returns.
std::string valueType(const Type& t);
// A member of a generated S::View (runtime/codec_view.h): std::string_view, std::span, E::View.
std::string viewType(const Type& t);
// A parameter of a method with $Lrpc.views: a coded value's view; else as paramType.
std::string viewParamType(const Type& t);
// Whether a View member's schema default is a constant made by a function in the source file
// (a Data or List default, or a Text one that is not a plain literal) rather than its literal.
bool viewDefaultIsStored(const Field& f);
// A coded struct held by value (not through a Box): its View holds that struct's View.
bool holdsCodedByValue(const Type& t);

// ---- Bools and padding of values copied whole (type_rules.cc) ----
// The bytes of a value that must read as 0/1: a Bool itself, or the Bools inside a struct.
std::vector<uint32_t> boolBytes(const Type& t);
// The Bools inside a flattened struct value (a Bool of its own is read as != 0 instead).
const std::vector<uint32_t>& boolsInside(const Type& t);
// The padding inside a flattened struct value, {offset, length}, which writers zero.
const std::vector<std::pair<uint32_t, uint32_t>>& paddingInside(const Type& t);

// ---- Declarations a value needs first (type_rules.cc) ----
// A struct member of type `t`: the declaration it needs complete (a struct held by value, an
// enum), or 0. A Box and a std::vector may hold an incomplete struct.
uint64_t memberNeeds(const Type& t);
// A parameter or result of type `t`: the declarations its frame and its C++ types need complete
// (enums at any depth, a capability's interface, a struct the frame holds by value or, with
// `heldWhole`, a several-result struct holds).
void frameNeeds(const Type& t, bool heldWhole, std::set<uint64_t>& out);
// The interfaces whose capabilities a value holds itself or in its Lists (lrpc::Capability,
// the runtime's, is not one).
void capabilitiesIn(const Type& t, std::set<uint64_t>& out);

}  // namespace lrpc::stubgen
