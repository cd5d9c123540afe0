// The answers of type_rules.h, kind by kind.
#include "stubgen/type_rules.h"

#include "stubgen/kinds.h"

namespace lrpc::stubgen {

bool isVariable(const Type& t) {
  return t.kind == Kind::kText || t.kind == Kind::kData || t.kind == Kind::kList || (t.kind == Kind::kStruct && t.coded);
}

bool isCapability(const Type& t) { return t.kind == Kind::kInterface; }

bool isBytes(const Type& t) { return t.kind == Kind::kData; }

bool startsEmpty(const Type& t) { return t.kind == Kind::kText || t.kind == Kind::kData || t.kind == Kind::kList; }

uint32_t fixedSize(Kind k) {
  if (const Scalar* s = scalarOf(k)) return s->size;
  switch (k) {
    case Kind::kEnum: return 2;  // enum class : uint16_t
    case Kind::kInterface: return 4;  // a capability id
    default: return 8;  // VarRef
  }
}

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

std::string frameType(const Type& t) {
  if (const Scalar* s = scalarOf(t.kind)) return s->frameType;
  if (isVariable(t)) return "::lrpc::VarRef";
  if (t.kind == Kind::kInterface) return "uint32_t";  // a capability id (runtime/capability.h)
  return t.cppName;  // an enum or a flattened struct
}

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

bool viewDefaultIsStored(const Field& f) {
  if (f.defaultValue.empty()) return false;
  const Kind k = f.type.kind;
  const bool literal = k == Kind::kText && f.defaultValue.front() == '"';
  return k == Kind::kData || k == Kind::kList || (k == Kind::kText && !literal);
}

bool holdsCodedByValue(const Type& t) { return t.kind == Kind::kStruct && t.coded && !t.boxed; }

std::vector<uint32_t> boolBytes(const Type& t) {
  if (t.kind == Kind::kBool) return {0};
  return boolsInside(t);
}

const std::vector<uint32_t>& boolsInside(const Type& t) {
  static const std::vector<uint32_t> none;
  return t.kind == Kind::kStruct ? t.boolOffsets : none;
}

const std::vector<std::pair<uint32_t, uint32_t>>& paddingInside(const Type& t) {
  static const std::vector<std::pair<uint32_t, uint32_t>> none;
  return t.kind == Kind::kStruct ? t.padding : none;
}

uint64_t memberNeeds(const Type& t) {
  return (t.kind == Kind::kStruct && !t.boxed) || t.kind == Kind::kEnum ? t.id : 0;
}

void frameNeeds(const Type& t, bool heldWhole, std::set<uint64_t>& out) {
  // A List's enum elements are spelled in its std::span and std::vector.
  for (const Type* e = &t; e != nullptr; e = e->kind == Kind::kList ? e->elemType.get() : nullptr) {
    if (e->kind == Kind::kEnum) out.insert(e->id);
  }
  // Its Client, held by value (lrpc::Capability's is the runtime's).
  if (t.kind == Kind::kInterface && t.id != 0) out.insert(t.id);
  if (t.kind == Kind::kStruct && (!isVariable(t) || heldWhole)) out.insert(t.id);
}

void capabilitiesIn(const Type& t, std::set<uint64_t>& out) {
  if (t.kind == Kind::kInterface && t.id != 0) out.insert(t.id);  // 0: lrpc::Capability
  if (t.kind == Kind::kList && t.elemType) capabilitiesIn(*t.elemType, out);
}

}  // namespace lrpc::stubgen
