// The C++ spelling of model types and the small text pieces every emitter shares: what a
// value is called in a frame, a struct member, a parameter and a result, and the lines that
// zero padding or force Bool bytes to 0/1.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "stubgen/model.h"

namespace lrpc::stubgen {

// A List element as a Type of its own.
Type elemOf(const Type& list);
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

std::string ind(int n);
// `text` with every line indented by n more spaces.
std::string indentLines(const std::string& text, int n);
std::string offsetList(const std::vector<uint32_t>& offsets);
// Zeroes the padding ranges of a struct value at `base` (a std::byte* expression).
void emitZeroPadding(const std::string& base, const std::vector<std::pair<uint32_t, uint32_t>>& padding,
                     const std::string& I, std::string& out);
// Forces the Bool bytes inside a copied struct to 0/1 before any is read as a C++ bool.
void emitBoolFix(const std::string& object, const std::vector<uint32_t>& offsets, int in, std::string& out);

}  // namespace lrpc::stubgen
