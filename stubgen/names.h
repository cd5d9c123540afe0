// Naming rules for generated code: C++ identifiers from schema names (keyword escaping),
// PascalCase for generated type and constant names, namespaces, doc comments and the
// signature hash. Pure functions, no capnp types, so they are easy to test and reuse.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace lrpc::stubgen {

// `name` if it is a usable C++ identifier, else `name_` (C++ keywords, reserved spellings).
std::string cppIdent(std::string_view name);

// "bigInOut" -> "BigInOut".
std::string pascal(std::string_view name);

// "a::b" -> "::a::b"; "" -> "".
std::string qualifiedNamespace(std::string_view ns);

// The schema's doc comment as "// " lines at `indent` spaces (empty doc: empty string).
std::string docLines(std::string_view doc, int indent);

// FNV-1a, 64 bit: the interface signature hash (stable across compilers and runs).
uint64_t fnv1a64(std::string_view bytes);

// "0x0123456789abcdefull".
std::string hex64(uint64_t v);

// A C++ string literal for `s` (quotes and escapes included).
std::string quoted(std::string_view s);

}  // namespace lrpc::stubgen
