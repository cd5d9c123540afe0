// The scalar kinds, one row each: everything the generator knows about a number or a Bool is
// in its row, so a new scalar kind is a new enumerator in Kind (model.h) and a row here. The
// other kinds (enums, structs, Text, Data, Lists, capabilities) each carry decisions of their
// own, which type_rules.h gathers.
#pragma once

#include <capnp/schema.capnp.h>

#include <cstddef>
#include <cstdint>
#include <iterator>

#include "stubgen/model.h"

namespace lrpc::stubgen {

struct Scalar {
  Kind kind;
  capnp::schema::Type::Which capnp;
  const char* schemaName;  // as a schema spells it, and as the signature hash does
  const char* cppType;     // of a struct member, a parameter and a result
  const char* frameType;   // in a frame: a Bool is a byte (any value but 0/1 would be undefined as a bool)
  uint32_t size;           // in a frame; also its alignment
  const char* suffix;      // of a C++ literal, so that it has the member's type ("LL", "u", "f")
};

using CType = capnp::schema::Type;

inline constexpr Scalar kScalars[] = {
    {Kind::kBool, CType::BOOL, "Bool", "bool", "uint8_t", 1, ""},
    {Kind::kInt8, CType::INT8, "Int8", "int8_t", "int8_t", 1, ""},
    {Kind::kInt16, CType::INT16, "Int16", "int16_t", "int16_t", 2, ""},
    {Kind::kInt32, CType::INT32, "Int32", "int32_t", "int32_t", 4, ""},
    {Kind::kInt64, CType::INT64, "Int64", "int64_t", "int64_t", 8, "LL"},
    {Kind::kUInt8, CType::UINT8, "UInt8", "uint8_t", "uint8_t", 1, "u"},
    {Kind::kUInt16, CType::UINT16, "UInt16", "uint16_t", "uint16_t", 2, "u"},
    {Kind::kUInt32, CType::UINT32, "UInt32", "uint32_t", "uint32_t", 4, "u"},
    {Kind::kUInt64, CType::UINT64, "UInt64", "uint64_t", "uint64_t", 8, "ull"},
    {Kind::kFloat32, CType::FLOAT32, "Float32", "float", "float", 4, "f"},
    {Kind::kFloat64, CType::FLOAT64, "Float64", "double", "double", 8, ""},
};

// Every scalar kind has its row, in the enum's order (the scalars come first in Kind): an
// enumerator added without a row stops the build here rather than generating wrong code.
constexpr bool rowsMatchKinds() {
  for (size_t i = 0; i < std::size(kScalars); ++i) {
    if (static_cast<size_t>(kScalars[i].kind) != i) return false;
  }
  return std::size(kScalars) == static_cast<size_t>(Kind::kEnum);
}
static_assert(rowsMatchKinds(), "kScalars needs one row per scalar Kind, in Kind's order");

// The row of a scalar kind; nullptr for any other kind.
constexpr const Scalar* scalarOf(Kind k) {
  for (const Scalar& s : kScalars) {
    if (s.kind == k) return &s;
  }
  return nullptr;
}

// The row of a capnp scalar type; nullptr for any other type.
constexpr const Scalar* scalarOf(CType::Which w) {
  for (const Scalar& s : kScalars) {
    if (s.capnp == w) return &s;
  }
  return nullptr;
}

}  // namespace lrpc::stubgen
