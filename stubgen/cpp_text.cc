#include "stubgen/cpp_text.h"

#include "stubgen/kinds.h"

namespace lrpc::stubgen {

// A List element as a Type of its own.
Type elemOf(const Type& list) {
  if (list.elemType) return *list.elemType;
  Type e;
  e.kind = list.elem;
  e.id = list.elemId;
  e.cppName = list.cppName;
  e.boolOffsets = list.boolOffsets;
  e.padding = list.padding;
  return e;
}

// How a value sits in a frame (and a List element in the tail).
std::string frameType(const Type& t) {
  if (const Scalar* s = scalarOf(t.kind)) return s->frameType;
  if (isVariable(t)) return "::lrpc::VarRef";
  if (t.kind == Kind::kInterface) return "uint32_t";  // a capability id (runtime/capability.h)
  return t.cppName;  // an enum or a flattened struct
}

// A member of a generated plain struct (an owning value: std::string, std::vector, ...).
std::string memberType(const Type& t) {
  if (const Scalar* s = scalarOf(t.kind)) return s->cppType;
  if (t.kind == Kind::kStruct && t.boxed) return "::lrpc::Box<" + t.cppName + ">";
  if (t.kind == Kind::kEnum || t.kind == Kind::kStruct) return t.cppName;
  // Inside a value: a type that needs no complete Client (runtime/codec.h, Cap).
  if (t.kind == Kind::kInterface) return "::lrpc::Cap<" + t.cppName + ">";
  return valueType(t);
}

std::string elemParamType(const Type& e) {
  if (e.kind == Kind::kText) return "std::string_view";
  if (e.kind == Kind::kData) return "std::span<const uint8_t>";
  return memberType(e);
}

std::string paramType(const Type& t) {
  switch (t.kind) {
    case Kind::kStruct: return "const " + t.cppName + "&";
    case Kind::kInterface: return "const " + t.cppName + "::Client&";
    case Kind::kText: return "std::string_view";
    case Kind::kData: return "std::span<const uint8_t>";
    case Kind::kList: return "std::span<const " + elemParamType(elemOf(t)) + ">";
    default: return memberType(t);
  }
}

std::string valueType(const Type& t) {
  switch (t.kind) {
    case Kind::kInterface: return t.cppName + "::Client";
    case Kind::kText: return "std::string";
    case Kind::kData: return "std::vector<uint8_t>";
    case Kind::kList: return "std::vector<" + memberType(elemOf(t)) + ">";
    default: return memberType(t);
  }
}

std::string viewType(const Type& t) {
  if (t.kind == Kind::kStruct && t.coded) {
    return t.boxed ? "::lrpc::BoxView<" + t.cppName + "::View>" : t.cppName + "::View";
  }
  switch (t.kind) {
    case Kind::kText: return "std::string_view";
    case Kind::kData: return "std::span<const uint8_t>";
    case Kind::kList: return "std::span<const " + viewType(elemOf(t)) + ">";
    default: return memberType(t);
  }
}

std::string viewParamType(const Type& t) {
  if (!t.coded) return paramType(t);
  return t.kind == Kind::kStruct ? "const " + viewType(t) + "&" : viewType(t);
}

std::string ind(int n) { return std::string(static_cast<size_t>(n), ' '); }

std::string offsetList(const std::vector<uint32_t>& offsets) {
  std::string s = "{";
  for (size_t i = 0; i < offsets.size(); ++i) s += (i ? ", " : "") + std::to_string(offsets[i]) + "u";
  return s + "}";
}

std::string indentLines(const std::string& text, int n) {
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    end = end == std::string::npos ? text.size() : end + 1;
    out += ind(n);
    out.append(text, pos, end - pos);
    pos = end;
  }
  return out;
}

void emitZeroPadding(const std::string& base, const std::vector<std::pair<uint32_t, uint32_t>>& padding,
                     const std::string& I, std::string& out) {
  for (auto [o, n] : padding) {
    out += I + "std::memset(" + base + " + " + std::to_string(o) + ", 0, " + std::to_string(n) + ");\n";
  }
}

void emitBoolFix(const std::string& object, const std::vector<uint32_t>& offsets, int in, std::string& out) {
  if (offsets.empty()) return;
  const std::string I = ind(in);
  out += I + "for (uint32_t o_ : std::initializer_list<uint32_t>" + offsetList(offsets) + ") {\n";
  out += I + "  unsigned char* b_ = reinterpret_cast<unsigned char*>(&" + object + ") + o_;\n";
  out += I + "  *b_ = *b_ != 0 ? 1 : 0;\n";
  out += I + "}\n";
}

}  // namespace lrpc::stubgen
