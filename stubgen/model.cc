#include "stubgen/model.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <regex>

#include <unistd.h>

#include "stubgen/names.h"

namespace lrpc::stubgen {
namespace {

using capnp::schema::Node;
using CType = capnp::schema::Type;
namespace schema = capnp::schema;

uint32_t alignUp(uint32_t n, uint32_t a) { return (n + a - 1) / a * a; }

bool isVariable(Kind k) { return k == Kind::kText || k == Kind::kData || k == Kind::kList; }

std::string baseNameOf(const std::string& displayName) {
  std::string name = displayName.substr(displayName.find_last_of('/') + 1);
  if (name.size() > 6 && name.compare(name.size() - 6, 6, ".capnp") == 0) name.resize(name.size() - 6);
  return name;
}

// "dir/calc.capnp:Calc.Op" -> "Calc.Op".
std::string localPath(Node::Reader n) {
  std::string dn = n.getDisplayName();
  return dn.substr(n.getDisplayNamePrefixLength() > 0 ? dn.find(':') + 1 : dn.size());
}

const char* primitiveName(Kind k) {
  switch (k) {
    case Kind::kBool: return "Bool";
    case Kind::kInt8: return "Int8";
    case Kind::kInt16: return "Int16";
    case Kind::kInt32: return "Int32";
    case Kind::kInt64: return "Int64";
    case Kind::kUInt8: return "UInt8";
    case Kind::kUInt16: return "UInt16";
    case Kind::kUInt32: return "UInt32";
    case Kind::kUInt64: return "UInt64";
    case Kind::kFloat32: return "Float32";
    case Kind::kFloat64: return "Float64";
    case Kind::kText: return "Text";
    case Kind::kData: return "Data";
    default: return "?";
  }
}

bool primitiveKind(CType::Which w, Kind& out) {
  switch (w) {
    case CType::BOOL: out = Kind::kBool; return true;
    case CType::INT8: out = Kind::kInt8; return true;
    case CType::INT16: out = Kind::kInt16; return true;
    case CType::INT32: out = Kind::kInt32; return true;
    case CType::INT64: out = Kind::kInt64; return true;
    case CType::UINT8: out = Kind::kUInt8; return true;
    case CType::UINT16: out = Kind::kUInt16; return true;
    case CType::UINT32: out = Kind::kUInt32; return true;
    case CType::UINT64: out = Kind::kUInt64; return true;
    case CType::FLOAT32: out = Kind::kFloat32; return true;
    case CType::FLOAT64: out = Kind::kFloat64; return true;
    default: return false;
  }
}

uint32_t primitiveSize(Kind k) {
  switch (k) {
    case Kind::kBool: case Kind::kInt8: case Kind::kUInt8: return 1;
    case Kind::kInt16: case Kind::kUInt16: case Kind::kEnum: return 2;
    case Kind::kInt32: case Kind::kUInt32: case Kind::kFloat32: return 4;
    case Kind::kInt64: case Kind::kUInt64: case Kind::kFloat64: return 8;
    default: return 8;  // VarRef
  }
}

bool hasAnnotation(capnp::List<schema::Annotation>::Reader anns, uint64_t id) {
  for (auto a : anns) {
    if (a.getId() == id) return true;
  }
  return false;
}

bool getUInt32Annotation(capnp::List<schema::Annotation>::Reader anns, uint64_t id, uint32_t& out) {
  for (auto a : anns) {
    if (a.getId() == id && a.getValue().isUint32()) {
      out = a.getValue().getUint32();
      return true;
    }
  }
  return false;
}

// Fields in declaration order (capnp lists them by ordinal).
std::vector<schema::Field::Reader> fieldsInCodeOrder(Node::Reader n, std::vector<unsigned>* indexes) {
  std::vector<std::pair<uint16_t, unsigned>> order;
  auto fields = n.getStruct().getFields();
  for (unsigned i = 0; i < fields.size(); ++i) order.emplace_back(fields[i].getCodeOrder(), i);
  std::sort(order.begin(), order.end());
  std::vector<schema::Field::Reader> out;
  for (auto& [code, i] : order) {
    out.push_back(fields[i]);
    if (indexes) indexes->push_back(i);
  }
  return out;
}

}  // namespace

ModelBuilder::ModelBuilder(const capnp::SchemaLoader& loader, schema::CodeGeneratorRequest::Reader request)
    : loader_(loader), request_(request) {
  for (auto info : request.getSourceInfo()) sourceInfo_.emplace(info.getId(), info);
}

capnp::Schema ModelBuilder::node(uint64_t id) const { return loader_.get(id); }

std::string ModelBuilder::docOf(uint64_t id) const {
  auto it = sourceInfo_.find(id);
  return it == sourceInfo_.end() ? std::string() : std::string(it->second.getDocComment());
}

std::string ModelBuilder::memberDoc(uint64_t id, unsigned index) const {
  auto it = sourceInfo_.find(id);
  if (it == sourceInfo_.end() || index >= it->second.getMembers().size()) return {};
  return it->second.getMembers()[index].getDocComment();
}

uint64_t ModelBuilder::fileIdOf(uint64_t id) const {
  // Method parameter structs have scopeId 0, so go by the display name's file part.
  std::string dn = node(id).getProto().getDisplayName();
  std::string file = dn.substr(0, dn.find(':'));
  for (auto n : request_.getNodes()) {
    if (n.isFile() && file == n.getDisplayName().cStr()) return n.getId();
  }
  return 0;
}

std::string ModelBuilder::fileOf(uint64_t id) const {
  std::string dn = node(id).getProto().getDisplayName();
  return dn.substr(0, dn.find(':'));
}

std::string ModelBuilder::cppNameOf(uint64_t id) const {
  auto proto = node(id).getProto();
  std::string ns;
  if (uint64_t fileId = fileIdOf(id)) {
    for (auto a : node(fileId).getProto().getAnnotations()) {
      if (a.getId() == kCxxNamespaceId && a.getValue().isText()) ns = a.getValue().getText();
    }
  }
  std::string out = qualifiedNamespace(ns);
  std::string path = localPath(proto);
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t end = path.find('.', pos);
    if (end == std::string::npos) end = path.size();
    out += "::" + cppIdent(path.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

// capnp 0.9's CodeGeneratorRequest carries no source positions, so the line of a declaration
// is found by reading the schema text: each (keyword, name) step is searched from the line
// where the previous one was found. A step that is not found keeps the previous line; a file
// that cannot be read gives 0 (the message then names no line). Never fails.
int ModelBuilder::lineOf(uint64_t fileId, const std::vector<std::pair<std::string, std::string>>& path) const {
  if (fileId == 0) return 0;
  std::string file = node(fileId).getProto().getDisplayName();
  auto cached = sourceLines_.find(file);
  if (cached == sourceLines_.end()) {
    std::vector<std::string> candidates{file};
    // capnp runs the plugin inside the output directory (and sets $PWD to it), but display
    // names are relative to where capnp itself runs, or to its --src-prefix: ask the parent.
    if (!file.empty() && file[0] != '/') {
      const std::string parent = "/proc/" + std::to_string(getppid());
      candidates.push_back(parent + "/cwd/" + file);
      std::ifstream cmdline(parent + "/cmdline", std::ios::binary);
      for (std::string arg; std::getline(cmdline, arg, '\0');) {
        if (arg.rfind("--src-prefix=", 0) == 0) {
          std::string prefix = arg.substr(13);
          if (!prefix.empty() && prefix[0] != '/') prefix = parent + "/cwd/" + prefix;
          candidates.push_back(prefix + "/" + file);
        }
      }
      if (const char* dir = std::getenv("LRPC_SCHEMA_DIR")) candidates.push_back(std::string(dir) + "/" + file);
    }
    std::vector<std::string> lines;
    for (const auto& c : candidates) {
      std::ifstream in(c);
      if (!in) continue;
      for (std::string line; std::getline(in, line);) {
        if (size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
        lines.push_back(line);
      }
      break;
    }
    cached = sourceLines_.emplace(file, std::move(lines)).first;
  }
  const auto& lines = cached->second;
  if (lines.empty()) return 0;
  size_t at = 0;
  bool any = false;
  for (const auto& [kind, name] : path) {
    std::string pattern;
    if (kind == "interface" || kind == "struct" || kind == "enum") {
      pattern = "\\b" + kind + "\\s+" + name + "\\b";
    } else if (kind == "method") {
      pattern = "\\b" + name + "\\s*@\\s*[0-9]+";
    } else if (kind == "field") {  // "name @3 :T" or a group "name :group"
      pattern = "\\b" + name + "\\s*(@\\s*[0-9]+|:)";
    } else {  // param / result
      pattern = "\\b" + name + "\\s*:";
    }
    std::regex re(pattern);
    for (size_t i = at; i < lines.size(); ++i) {
      if (std::regex_search(lines[i], re)) {
        at = i;
        any = true;
        break;
      }
    }
  }
  return any ? static_cast<int>(at) + 1 : 0;
}

namespace {
std::string where(const std::string& file, int line) {
  return line > 0 ? file + ":" + std::to_string(line) + ": " : file + ": ";
}
}  // namespace

bool ModelBuilder::convertType(CType::Reader t, bool inStruct, const std::string& context, uint64_t fileId,
                               int line, ::lrpc::stubgen::Type& out, std::vector<std::string>& errors) {
  const std::string at = where(fileId ? std::string(node(fileId).getProto().getDisplayName()) : "?", line) + context;
  auto fail = [&](const std::string& what) {
    errors.push_back(at + ": " + what);
    return false;
  };
  const char* kFixed =
      "lrpc structs are fixed-size and copied whole into the frame (DESIGN: structs are flattened); "
      "pass variable-size values as method parameters or results instead";
  Kind k;
  if (primitiveKind(t.which(), k)) {
    out.kind = k;
    return true;
  }
  switch (t.which()) {
    case CType::VOID:
      return fail("Void is not supported (a parameter, result or field must carry a value; "
                  "use an empty parameter or result list instead)");
    case CType::TEXT:
    case CType::DATA:
      if (inStruct) {
        return fail(std::string(t.isText() ? "Text" : "Data") + " is not allowed in a struct (" + kFixed + ")");
      }
      out.kind = t.isText() ? Kind::kText : Kind::kData;
      return true;
    case CType::ENUM: {
      auto e = node(t.getEnum().getTypeId()).getProto();
      if (e.getIsGeneric()) return fail("generic scopes are not supported");
      out.kind = Kind::kEnum;
      out.id = e.getId();
      out.cppName = cppNameOf(out.id);
      return true;
    }
    case CType::STRUCT: {
      uint64_t id = t.getStruct().getTypeId();
      auto s = node(id).getProto();
      if (s.getIsGeneric() || t.getStruct().getBrand().getScopes().size() > 0) {
        return fail("generic struct " + localPath(s) +
                    " is not supported (frames need one concrete layout at generation time)");
      }
      if (!checkStruct(id, errors)) {
        return fail("struct " + localPath(s) + " cannot be used (see its error)");
      }
      out.kind = Kind::kStruct;
      out.id = id;
      out.cppName = cppNameOf(id);
      out.boolOffsets.clear();
      boolOffsets(id, 0, out.boolOffsets);
      return true;
    }
    case CType::LIST: {
      if (inStruct) return fail(std::string("List is not allowed in a struct (") + kFixed + ")");
      auto e = t.getList().getElementType();
      ::lrpc::stubgen::Type elem;
      if (e.isList()) {
        return fail("List(List(...)) is not supported (only one level of variable size per value: "
                    "a frame names each value by one offset and length)");
      }
      if (e.isAnyPointer() || e.isInterface() || e.isVoid()) {
        const char* what = e.isVoid() ? "List(Void)" : e.isInterface() ? "List of an interface" : "List(AnyPointer)";
        return fail(std::string(what) + " is not supported (lists carry plain data: primitives, enums, "
                    "fixed-size structs, Text or Data)");
      }
      if (!convertType(e, false, context, fileId, line, elem, errors)) return false;
      out.kind = Kind::kList;
      out.elem = elem.kind;
      out.elemId = elem.id;
      out.cppName = elem.cppName;
      out.boolOffsets = elem.boolOffsets;
      return true;
    }
    case CType::INTERFACE:
      return fail("interface " + localPath(node(t.getInterface().getTypeId()).getProto()) +
                  " as a value is not supported (capabilities are not passed: lrpc moves plain data "
                  "through A-stacks and datagrams; bind to the interface by name instead)");
    case CType::ANY_POINTER:
      if (t.getAnyPointer().isParameter() || t.getAnyPointer().isImplicitMethodParameter()) {
        return fail("generic parameter type is not supported (generics are not supported: frames need "
                    "one concrete layout at generation time)");
      }
      return fail("AnyPointer is not supported (frames need a type known at generation time)");
    default:
      return fail("this type is not supported");
  }
}

ModelBuilder::Layout ModelBuilder::layoutOf(const ::lrpc::stubgen::Type& t) const {
  if (t.kind == Kind::kStruct) {
    auto it = layouts_.find(t.id);
    return it == layouts_.end() ? Layout{1, 1} : it->second;
  }
  if (isVariable(t.kind)) return {8, 4};  // lrpc::VarRef
  uint32_t s = primitiveSize(t.kind);
  return {s, s};
}

// Validates a struct used by value (in any file) and computes its layout, once.
bool ModelBuilder::checkStruct(uint64_t id, std::vector<std::string>& errors) {
  if (auto it = structOk_.find(id); it != structOk_.end()) return it->second;
  if (inProgress_.count(id)) {
    auto s = node(id).getProto();
    uint64_t fileId = fileIdOf(id);
    errors.push_back(where(fileOf(id), lineOf(fileId, {{"struct", s.getDisplayName().cStr() + s.getDisplayNamePrefixLength()}})) +
                     "struct " + localPath(s) +
                     ": contains itself (a fixed-size struct cannot; capnp allows it only through pointers)");
    return false;
  }
  inProgress_.insert(id);
  auto s = node(id).getProto();
  const std::string name = localPath(s);
  const std::string shortName = s.getDisplayName().cStr() + s.getDisplayNamePrefixLength();
  uint64_t fileId = fileIdOf(id);
  const std::string file = fileOf(id);
  bool ok = true;
  int structLine = lineOf(fileId, {{"struct", shortName}});
  if (s.getIsGeneric()) {
    errors.push_back(where(file, structLine) + "struct " + name +
                     ": generic structs are not supported (frames need one concrete layout at generation time)");
    ok = false;
  }
  if (s.getStruct().getDiscriminantCount() > 0) {
    errors.push_back(where(file, structLine) + "struct " + name +
                     ": unions are not supported (a frame has one fixed layout; use separate fields or methods)");
    ok = false;
  }
  Layout layout{0, 1};
  for (auto f : fieldsInCodeOrder(s, nullptr)) {
    std::string fname = f.getName();
    int line = lineOf(fileId, {{"struct", shortName}, {"field", fname}});
    std::string ctx = "struct " + name + ", field " + fname;
    if (f.isGroup()) {
      errors.push_back(where(file, line) + ctx +
                       ": groups and unions are not supported (a frame has one fixed layout)");
      ok = false;
      continue;
    }
    if (f.getDiscriminantValue() != schema::Field::NO_DISCRIMINANT) continue;  // reported as a union
    ::lrpc::stubgen::Type t;
    if (!convertType(f.getSlot().getType(), true, ctx, fileId, line, t, errors)) {
      ok = false;
      continue;
    }
    if (f.getSlot().getHadExplicitDefault()) {
      errors.push_back(where(file, line) + ctx +
                       ": default values are not supported (lrpc frames carry every value; a schema default "
                       "would silently not apply)");
      ok = false;
      continue;
    }
    uint32_t ignored = 0;
    if (getUInt32Annotation(f.getAnnotations(), kMaxBytesId, ignored)) {
      errors.push_back(where(file, line) + ctx +
                       ": $Lrpc.maxBytes applies only to Text, Data and List parameters and results (a struct "
                       "field's size is already known)");
      ok = false;
      continue;
    }
    Layout fl = layoutOf(t);
    layout.size = alignUp(layout.size, fl.align) + fl.size;
    layout.align = std::max(layout.align, fl.align);
  }
  layout.size = std::max<uint32_t>(1, alignUp(layout.size, layout.align));  // as C++ lays it out
  inProgress_.erase(id);
  layouts_[id] = layout;
  structOk_[id] = ok;
  return ok;
}

void ModelBuilder::boolOffsets(uint64_t structId, uint32_t base, std::vector<uint32_t>& out) {
  uint32_t offset = 0;
  for (auto f : fieldsInCodeOrder(node(structId).getProto(), nullptr)) {
    ::lrpc::stubgen::Type t;
    std::vector<std::string> ignored;  // the struct passed checkStruct
    if (f.isGroup() || !convertType(f.getSlot().getType(), true, "", 0, 0, t, ignored)) continue;
    Layout fl = layoutOf(t);
    offset = alignUp(offset, fl.align);
    if (t.kind == Kind::kBool) out.push_back(base + offset);
    if (t.kind == Kind::kStruct) {
      for (uint32_t o : t.boolOffsets) out.push_back(base + offset + o);
    }
    offset += fl.size;
  }
}

EnumDecl ModelBuilder::makeEnum(uint64_t id) {
  auto e = node(id).getProto();
  EnumDecl d;
  d.id = id;
  d.name = cppIdent(e.getDisplayName().cStr() + e.getDisplayNamePrefixLength());
  d.cppName = cppNameOf(id);
  d.doc = docOf(id);
  auto enumerants = e.getEnum().getEnumerants();
  for (unsigned i = 0; i < enumerants.size(); ++i) {
    d.enumerants.emplace_back(std::string("k").append(pascal(enumerants[i].getName().cStr())), memberDoc(id, i));
  }
  return d;
}

StructDecl ModelBuilder::makeStruct(uint64_t id, std::vector<std::string>& errors) {
  auto s = node(id).getProto();
  StructDecl d;
  d.id = id;
  d.name = cppIdent(s.getDisplayName().cStr() + s.getDisplayNamePrefixLength());
  d.cppName = cppNameOf(id);
  d.doc = docOf(id);
  if (!checkStruct(id, errors)) return d;
  std::vector<unsigned> indexes;
  auto fields = fieldsInCodeOrder(s, &indexes);
  uint32_t offset = 0;
  for (size_t i = 0; i < fields.size(); ++i) {
    Field f;
    f.schemaName = fields[i].getName();
    f.name = cppIdent(f.schemaName);
    f.doc = memberDoc(id, indexes[i]);
    std::vector<std::string> ignored;  // already reported by checkStruct
    convertType(fields[i].getSlot().getType(), true, "", 0, 0, f.type, ignored);
    noteUse(f.type);
    Layout fl = layoutOf(f.type);
    f.offset = alignUp(offset, fl.align);
    f.size = fl.size;
    offset = f.offset + fl.size;
    d.fields.push_back(std::move(f));
  }
  d.size = layouts_[id].size;
  d.align = layouts_[id].align;
  collectScope(id, d.nestedEnums, d.nestedStructs, nullptr, errors);
  return d;
}

void ModelBuilder::noteUse(const ::lrpc::stubgen::Type& t) {
  if (t.kind == Kind::kEnum || t.kind == Kind::kStruct) usedFiles_.insert(fileIdOf(t.id));
  if (t.kind == Kind::kList && (t.elem == Kind::kEnum || t.elem == Kind::kStruct)) usedFiles_.insert(fileIdOf(t.elemId));
}

namespace {

// Struct ids a struct's fields (and its nested structs' fields) refer to.
void structDeps(const StructDecl& s, std::set<uint64_t>& out) {
  for (const auto& f : s.fields) {
    if (f.type.kind == Kind::kStruct) out.insert(f.type.id);
  }
  for (const auto& n : s.nestedStructs) structDeps(n, out);
}

bool declares(const StructDecl& s, uint64_t id) {
  if (s.id == id) return true;
  for (const auto& n : s.nestedStructs) {
    if (declares(n, id)) return true;
  }
  return false;
}

// C++ needs a struct's member types complete first: order siblings by their dependencies.
std::vector<StructDecl> dependencyOrder(std::vector<StructDecl> in) {
  std::vector<StructDecl> out;
  std::vector<int> state(in.size(), 0);  // 0 new, 1 visiting, 2 done
  std::function<void(size_t)> visit = [&](size_t i) {
    if (state[i] != 0) return;
    state[i] = 1;
    std::set<uint64_t> deps;
    structDeps(in[i], deps);
    for (uint64_t dep : deps) {
      for (size_t j = 0; j < in.size(); ++j) {
        if (j != i && declares(in[j], dep)) visit(j);
      }
    }
    state[i] = 2;
    out.push_back(in[i]);
  };
  for (size_t i = 0; i < in.size(); ++i) visit(i);
  return out;
}

bool declares(const InterfaceDecl& d, uint64_t id) {
  if (d.id == id) return true;
  for (const auto& e : d.nestedEnums) {
    if (e.id == id) return true;
  }
  for (const auto& n : d.nestedStructs) {
    if (declares(n, id)) return true;
  }
  return false;
}

// An interface's stubs name its bases' frames and the types its own methods use: when those
// are declared in (or are) another interface of the same file, that one must come first.
std::vector<InterfaceDecl> dependencyOrder(std::vector<InterfaceDecl> in) {
  std::vector<InterfaceDecl> out;
  std::vector<int> state(in.size(), 0);
  std::function<void(size_t)> visit = [&](size_t i) {
    if (state[i] != 0) return;
    state[i] = 1;
    std::set<uint64_t> deps(in[i].bases.begin(), in[i].bases.end());
    for (size_t m = in[i].ownBegin; m < in[i].methods.size(); ++m) {
      for (const auto* fields : {&in[i].methods[m].params, &in[i].methods[m].results}) {
        for (const auto& f : *fields) {
          if (f.type.id) deps.insert(f.type.id);
          if (f.type.elemId) deps.insert(f.type.elemId);
        }
      }
    }
    for (uint64_t dep : deps) {
      for (size_t j = 0; j < in.size(); ++j) {
        if (j != i && declares(in[j], dep)) visit(j);
      }
    }
    state[i] = 2;
    out.push_back(in[i]);
  };
  for (size_t i = 0; i < in.size(); ++i) visit(i);
  return out;
}

}  // namespace

void ModelBuilder::collectScope(uint64_t scopeId, std::vector<EnumDecl>& enums, std::vector<StructDecl>& structs,
                                std::vector<InterfaceDecl>* interfaces, std::vector<std::string>& errors) {
  for (auto nested : node(scopeId).getProto().getNestedNodes()) {
    auto n = node(nested.getId()).getProto();
    switch (n.which()) {
      case Node::ENUM:
        enums.push_back(makeEnum(n.getId()));
        break;
      case Node::STRUCT:
        structs.push_back(makeStruct(n.getId(), errors));
        break;
      case Node::INTERFACE:
        if (interfaces) {
          interfaces->push_back(makeInterface(n.getId(), errors));
        } else {
          uint64_t fileId = fileIdOf(n.getId());
          errors.push_back(where(fileOf(n.getId()), lineOf(fileId, {{"interface", nested.getName().cStr()}})) +
                           "interface " + localPath(n) +
                           ": interfaces nested in a struct or interface are not supported; declare it at file scope");
        }
        break;
      default:  // constants and annotation declarations generate nothing
        break;
    }
  }
  structs = dependencyOrder(std::move(structs));
  if (interfaces) *interfaces = dependencyOrder(std::move(*interfaces));
}

bool ModelBuilder::makeFields(uint64_t structId, const std::string& ifaceName, const std::string& methodName,
                              const char* role, uint64_t fileId, int methodLine, std::vector<Field>& out,
                              std::vector<std::string>& errors) {
  auto s = node(structId).getProto();
  const std::string file = node(fileId).getProto().getDisplayName();
  bool ok = true;
  const std::string ctxBase = "interface " + ifaceName + ", method " + methodName;
  if (s.getIsGeneric()) {
    errors.push_back(where(file, methodLine) + ctxBase + ": generic " + role +
                     "s are not supported (frames need one concrete layout at generation time)");
    return false;
  }
  if (s.getStruct().getDiscriminantCount() > 0) {
    errors.push_back(where(file, methodLine) + ctxBase + ": unions in " + role +
                     "s are not supported (a frame has one fixed layout)");
    ok = false;
  }
  std::vector<unsigned> indexes;
  auto fields = fieldsInCodeOrder(s, &indexes);
  uint32_t offset = 0;
  for (size_t i = 0; i < fields.size(); ++i) {
    auto f = fields[i];
    Field p;
    p.schemaName = f.getName();
    p.name = cppIdent(p.schemaName);
    p.doc = memberDoc(structId, indexes[i]);
    std::string ctx = ctxBase + ", " + role + " " + p.schemaName;
    // Params and results are on the method's line or the lines after it.
    std::vector<std::pair<std::string, std::string>> path{{"interface", ifaceName}, {"method", methodName}, {"param", p.schemaName}};
    int line = lineOf(fileId, path);
    if (line == 0) line = methodLine;
    if (f.isGroup() || f.getDiscriminantValue() != schema::Field::NO_DISCRIMINANT) {
      errors.push_back(where(file, line) + ctx + ": groups and unions are not supported (a frame has one fixed layout)");
      ok = false;
      continue;
    }
    if (!convertType(f.getSlot().getType(), false, ctx, fileId, line, p.type, errors)) {
      ok = false;
      continue;
    }
    if (f.getSlot().getHadExplicitDefault()) {
      errors.push_back(where(file, line) + ctx +
                       ": default values are not supported (every argument is passed explicitly; a schema "
                       "default would silently not apply)");
      ok = false;
      continue;
    }
    if (getUInt32Annotation(f.getAnnotations(), kMaxBytesId, p.maxBytes) && !isVariable(p.type.kind)) {
      errors.push_back(where(file, line) + ctx +
                       ": $Lrpc.maxBytes applies only to Text, Data and List values (a fixed-size value's size is "
                       "already known)");
      ok = false;
      continue;
    }
    p.inPlace = hasAnnotation(f.getAnnotations(), kInPlaceId);
    if (p.inPlace && (p.type.kind != Kind::kData || std::string_view(role) != "param")) {
      errors.push_back(where(file, line) + ctx +
                       ": $Lrpc.inPlace applies only to Data parameters (the server reads those bytes where the "
                       "client wrote them; anything else is checked, so it must be copied first)");
      ok = false;
      continue;
    }
    noteUse(p.type);
    Layout fl = layoutOf(p.type);
    p.offset = alignUp(offset, fl.align);
    p.size = fl.size;
    offset = p.offset + fl.size;
    out.push_back(std::move(p));
  }
  return ok;
}

std::string ModelBuilder::canonicalType(const ::lrpc::stubgen::Type& t) const {
  switch (t.kind) {
    case Kind::kEnum: {
      auto e = node(t.id).getProto();
      std::string s = "Enum(" + localPath(e) + ":";
      for (auto en : e.getEnum().getEnumerants()) s += std::string(en.getName().cStr()) + ",";
      return s + ")";
    }
    case Kind::kStruct: {
      auto n = node(t.id).getProto();
      std::string s = "Struct(" + localPath(n) + "{";
      for (auto f : fieldsInCodeOrder(n, nullptr)) {
        ::lrpc::stubgen::Type ft;
        std::vector<std::string> ignored;
        const_cast<ModelBuilder*>(this)->convertType(f.getSlot().getType(), true, "", 0, 0, ft, ignored);
        s += std::string(f.getName().cStr()) + ":" + canonicalType(ft) + ",";
      }
      return s + "})";
    }
    case Kind::kList: {
      ::lrpc::stubgen::Type e;
      e.kind = t.elem;
      e.id = t.elemId;
      return "List(" + canonicalType(e) + ")";
    }
    default:
      return primitiveName(t.kind);
  }
}

void ModelBuilder::addMethods(uint64_t ifaceId, std::set<uint64_t>& seen, std::vector<Method>& out,
                              std::vector<std::string>& errors) {
  if (!seen.insert(ifaceId).second) return;  // a diamond: each interface's methods once
  auto iface = node(ifaceId).getProto();
  const std::string ifaceName = iface.getDisplayName().cStr() + iface.getDisplayNamePrefixLength();
  const std::string ifaceLocal = localPath(iface);
  uint64_t fileId = fileIdOf(ifaceId);
  const std::string file = fileOf(ifaceId);
  for (auto sup : iface.getInterface().getSuperclasses()) {
    if (sup.getBrand().getScopes().size() > 0 || node(sup.getId()).getProto().getIsGeneric()) {
      errors.push_back(where(file, lineOf(fileId, {{"interface", ifaceName}})) + "interface " + ifaceLocal +
                       ": extending a generic interface is not supported");
      continue;
    }
    usedFiles_.insert(fileIdOf(sup.getId()));
    if (ifaceId == rootId_) rootBases_.push_back(sup.getId());
    addMethods(sup.getId(), seen, out, errors);
  }
  uint32_t ifaceBytes = 0;
  bool haveIfaceBytes = getUInt32Annotation(iface.getAnnotations(), kAstackBytesId, ifaceBytes);
  auto methods = iface.getInterface().getMethods();
  for (unsigned i = 0; i < methods.size(); ++i) {
    auto m = methods[i];
    Method d;
    d.schemaName = m.getName();
    d.name = cppIdent(d.schemaName);
    d.constName = std::string("k").append(pascal(d.schemaName));  // g++ 12 -O3: false -Wrestrict on "k" + string
    d.framePrefix = pascal(d.schemaName);
    d.frameScope = cppNameOf(ifaceId);
    d.qualifiedName = ifaceLocal + "." + d.schemaName;
    d.ordinal = static_cast<uint16_t>(i);
    d.doc = memberDoc(ifaceId, i);
    const int line = lineOf(fileId, {{"interface", ifaceName}, {"method", d.schemaName}});
    const std::string ctx = "interface " + ifaceLocal + ", method " + d.schemaName;
    static const std::set<std::string> kReserved = {"dispatch", "binding", "withOptions", "procedures",
                                                    "descriptor", "procedureCount"};
    if (kReserved.count(d.schemaName)) {
      errors.push_back(where(file, line) + ctx + ": the name '" + d.schemaName +
                       "' is reserved by the generated Client/Server classes; rename the method");
    }
    for (const auto& other : out) {
      if (other.schemaName == d.schemaName) {
        errors.push_back(where(file, line) + ctx + ": in interface " + rootInterface_ +
                         ", the name clashes with method " + other.qualifiedName +
                         " (an interface and all its bases share one C++ class, so method names must be unique across them)");
      }
    }
    if (m.getImplicitParameters().size() > 0) {
      errors.push_back(where(file, line) + ctx +
                       ": generic methods are not supported (frames need one concrete layout at generation time)");
      continue;
    }
    bool ok = makeFields(m.getParamStructType(), ifaceLocal, d.schemaName, "param", fileId, line, d.params, errors);
    ok = makeFields(m.getResultStructType(), ifaceLocal, d.schemaName, "result", fileId, line, d.results, errors) && ok;
    if (!ok) continue;
    auto frame = [&](const std::vector<Field>& fs, uint32_t& size, uint32_t& align) {
      uint32_t end = 0;
      for (const auto& f : fs) {
        end = f.offset + f.size;
        align = std::max(align, layoutOf(f.type).align);
        d.variable = d.variable || isVariable(f.type.kind);
      }
      size = alignUp(end, align);
    };
    frame(d.params, d.argsSize, d.argsAlign);
    frame(d.results, d.resultsSize, d.resultsAlign);
    getUInt32Annotation(m.getAnnotations(), kAstacksId, d.astackCount);
    if (d.astackCount == 0) {
      errors.push_back(where(file, line) + ctx + ": $Lrpc.astacks(0) leaves no A-stack to call it with");
    }
    d.astackBytes = std::max(d.argsSize, d.resultsSize);
    if (d.variable) {
      uint32_t room = haveIfaceBytes ? ifaceBytes : kDefaultAstackBytes;
      getUInt32Annotation(m.getAnnotations(), kAstackBytesId, room);
      d.astackBytes = std::max(d.astackBytes, room);
    }
    out.push_back(std::move(d));
  }
}

InterfaceDecl ModelBuilder::makeInterface(uint64_t id, std::vector<std::string>& errors) {
  auto n = node(id).getProto();
  InterfaceDecl d;
  d.id = id;
  d.name = cppIdent(n.getDisplayName().cStr() + n.getDisplayNamePrefixLength());
  d.cppName = cppNameOf(id);
  d.descriptorName = baseNameOf(fileOf(id)) + ".capnp:" + localPath(n);
  d.doc = docOf(id);
  if (n.getIsGeneric()) {
    errors.push_back(where(fileOf(id), lineOf(fileIdOf(id), {{"interface", d.name}})) + "interface " + localPath(n) +
                     ": generic interfaces are not supported (frames need one concrete layout at generation time)");
    return d;
  }
  std::set<uint64_t> seen;
  std::vector<Method> all;
  rootInterface_ = localPath(n);
  rootId_ = id;
  rootBases_.clear();
  addMethods(id, seen, all, errors);
  d.bases = rootBases_;
  const std::string self = d.cppName;
  std::string signature;
  for (size_t i = 0; i < all.size(); ++i) {
    all[i].index = static_cast<uint32_t>(i);
    all[i].inherited = all[i].frameScope != self;
    signature += all[i].schemaName + "@" + std::to_string(all[i].ordinal) + "(";
    for (const auto& p : all[i].params) signature += p.schemaName + ":" + canonicalType(p.type) + ",";
    signature += ")->(";
    for (const auto& r : all[i].results) signature += r.schemaName + ":" + canonicalType(r.type) + ",";
    signature += ");";
  }
  d.ownBegin = static_cast<size_t>(std::find_if(all.begin(), all.end(), [](const Method& m) { return !m.inherited; }) -
                                   all.begin());
  // Inherited methods all come first (depth-first, bases before the interface itself).
  d.methods = std::move(all);
  d.signatureHash = fnv1a64(signature);
  collectScope(id, d.nestedEnums, d.nestedStructs, nullptr, errors);
  for (auto nested : n.getNestedNodes()) {
    const std::string nestedName = nested.getName();
    if (nestedName == "Client" || nestedName == "Server") {
      errors.push_back(where(fileOf(id), lineOf(fileIdOf(id), {{"interface", d.name}})) + "interface " + localPath(n) +
                       ": a nested type named " + nestedName + " clashes with the generated " + d.name +
                       "::" + nestedName + "; rename it");
    }
  }
  return d;
}

FileModel ModelBuilder::build(uint64_t fileId, std::vector<std::string>& errors) {
  FileModel m;
  auto f = node(fileId).getProto();
  m.sourceName = f.getDisplayName();
  m.baseName = baseNameOf(m.sourceName);
  for (auto a : f.getAnnotations()) {
    if (a.getId() == kCxxNamespaceId && a.getValue().isText()) m.cppNamespace = a.getValue().getText();
  }
  m.doc = docOf(fileId);
  collectScope(fileId, m.enums, m.structs, &m.interfaces, errors);
  // File-scope structs are emitted before the interfaces, so they cannot use a type nested in one.
  for (const auto& s : m.structs) {
    std::set<uint64_t> deps;
    structDeps(s, deps);
    for (uint64_t dep : deps) {
      for (const auto& i : m.interfaces) {
        if (i.id != dep && declares(i, dep)) {
          errors.push_back(where(m.sourceName, lineOf(fileId, {{"struct", s.name}})) + "struct " + s.name + ": uses " +
                           cppNameOf(dep) + ", which is declared inside interface " + i.name +
                           "; declare it at file scope");
        }
      }
    }
  }
  for (uint64_t used : usedFiles_) {
    if (used != 0 && used != fileId) m.includes.push_back(baseNameOf(node(used).getProto().getDisplayName()) + ".lrpc.h");
  }
  std::sort(m.includes.begin(), m.includes.end());
  m.includes.erase(std::unique(m.includes.begin(), m.includes.end()), m.includes.end());
  return m;
}

}  // namespace lrpc::stubgen
