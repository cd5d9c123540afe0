// The small text pieces every emitter shares: indentation, and the lines that zero padding or
// force Bool bytes to 0/1. (How each type is spelled in C++ is in type_rules.h.)
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "stubgen/model.h"

namespace lrpc::stubgen {

std::string ind(int n);
std::string offsetList(const std::vector<uint32_t>& offsets);
// Zeroes the padding ranges of a struct value at `base` (a std::byte* expression).
void emitZeroPadding(const std::string& base, const std::vector<std::pair<uint32_t, uint32_t>>& padding,
                     const std::string& I, std::string& out);
// Forces the Bool bytes inside a copied struct to 0/1 before any is read as a C++ bool.
void emitBoolFix(const std::string& object, const std::vector<uint32_t>& offsets, int in, std::string& out);

}  // namespace lrpc::stubgen
