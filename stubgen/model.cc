#include "stubgen/model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <regex>

#include <unistd.h>

#include <capnp/dynamic.h>

#include "stubgen/cpp_text.h"
#include "stubgen/names.h"

namespace lrpc::stubgen {
namespace {

using capnp::schema::Node;
using CType = capnp::schema::Type;
namespace schema = capnp::schema;

uint32_t alignUp(uint32_t n, uint32_t a) { return (n + a - 1) / a * a; }

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
    case Kind::kInterface: return 4;  // a capability id
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

// A C++ string literal of `text`, every byte outside printable ASCII escaped.
std::string cppStringLiteral(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f && c != '?') {  // '?': no trigraphs
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", c);
      out += buf;
    }
  }
  return out + "\"";
}

// An exact C++ literal of a float or double (hex float), or the numeric_limits expression.
std::string floatLiteral(double v, bool isFloat) {
  const std::string type = isFloat ? "float" : "double";
  if (std::isnan(v)) return "std::numeric_limits<" + type + ">::quiet_NaN()";
  if (std::isinf(v)) return std::string(v < 0 ? "-" : "") + "std::numeric_limits<" + type + ">::infinity()";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return std::string(buf) + (isFloat ? "f" : "");
}

}  // namespace

ModelBuilder::ModelBuilder(const capnp::SchemaLoader& loader, schema::CodeGeneratorRequest::Reader request)
    : loader_(loader), request_(request) {
  for (auto info : request.getSourceInfo()) sourceInfo_.emplace(info.getId(), info);
}

capnp::Schema ModelBuilder::node(uint64_t id) const {
  auto it = instances_.find(id);
  return loader_.get(it == instances_.end() ? id : it->second.genericId);
}

ModelBuilder::Bind::Bind(ModelBuilder& b, uint64_t id) : b_(b) {
  auto it = b.instances_.find(id);
  if (it == b.instances_.end()) return;
  scope_ = it->second.genericId;
  auto old = b.bindings_.find(scope_);
  had_ = old != b.bindings_.end();
  if (had_) saved_ = old->second;
  b.bindings_[scope_] = it->second.args;
}

ModelBuilder::Bind::~Bind() {
  if (scope_ == 0) return;
  if (had_) {
    b_.bindings_[scope_] = saved_;
  } else {
    b_.bindings_.erase(scope_);
  }
}

// A generic struct with concrete type arguments becomes a struct of its own (one per distinct
// C++ spelling of its arguments), generated as an explicit specialization of a class template.
bool ModelBuilder::instantiate(CType::Struct::Reader st, const std::string& path, uint64_t fileId, int line,
                               uint64_t& id, std::vector<Diag>& diags) {
  const uint64_t genericId = st.getTypeId();
  auto s = node(genericId).getProto();
  const std::string name = localPath(s);
  auto fail = [&](const std::string& what) {
    diags.push_back(diag(fileId, line, path + ": " + what));
    return false;
  };
  if (!s.getIsGeneric()) {
    return fail("struct " + name + " declared inside a generic scope is not supported (declare it at file scope)");
  }
  if (!node(s.getScopeId()).getProto().isFile()) {
    return fail("generic struct " + name + " declared inside a struct or interface is not supported (declare it at "
                "file scope)");
  }
  if (fileIdOf(genericId) != buildFileId_) {
    return fail("generic struct " + name + " from another file is not supported (its C++ specializations belong "
                "to that file: declare a struct there that uses " + name + " with these types)");
  }
  std::vector<::lrpc::stubgen::Type> args;
  bool bound = false;
  for (auto scope : st.getBrand().getScopes()) {
    if (scope.getScopeId() != genericId) continue;
    if (scope.isInherit()) {
      auto it = bindings_.find(genericId);
      if (it == bindings_.end()) break;
      args = it->second;
      bound = true;
      continue;
    }
    for (auto b : scope.getBind()) {
      if (b.isUnbound()) return fail("generic struct " + name + " without type arguments is not supported (give "
                                     "every parameter a concrete type: " + name + "(Text))");
      ::lrpc::stubgen::Type a;
      if (!convertType(b.getType(), true, path, fileId, line, a, diags)) return false;
      args.push_back(std::move(a));
    }
    bound = true;
  }
  if (!bound || args.size() != s.getParameters().size()) {
    return fail("generic struct " + name + " without type arguments is not supported (give every parameter a "
                "concrete type: " + name + "(Text))");
  }
  std::string key = std::to_string(genericId) + "<";
  for (const auto& a : args) key += memberType(a) + ",";
  auto [it, fresh] = instanceIds_.emplace(key, instances_.size() + 1);
  if (fresh) {
    instances_[it->second] = Instance{genericId, std::move(args)};
    instanceOrder_.push_back(it->second);
  }
  id = it->second;
  return true;
}

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
  if (auto in = instances_.find(id); in != instances_.end()) {
    std::string args;
    for (const auto& a : in->second.args) args += (args.empty() ? "" : ", ") + memberType(a);
    return cppNameOf(in->second.genericId) + "<" + args + ">";
  }
  auto proto = node(id).getProto();
  if (proto.isStruct() && proto.getStruct().getIsGroup()) {
    // A group's type is named after its field, inside its parent: Person.address -> Person::Address.
    auto parent = node(proto.getScopeId()).getProto();
    for (auto f : parent.getStruct().getFields()) {
      if (f.isGroup() && f.getGroup().getTypeId() == id) return cppNameOf(parent.getId()) + "::" + pascal(f.getName().cStr());
    }
  }
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

namespace {
void visitStruct(const StructDecl& s, const std::function<void(const InterfaceDecl&)>* ifn,
                 const std::function<void(const StructDecl&)>* sfn);
void visitInterface(const InterfaceDecl& d, const std::function<void(const InterfaceDecl&)>* ifn,
                    const std::function<void(const StructDecl&)>* sfn) {
  if (ifn) (*ifn)(d);
  for (const auto& s : d.nestedStructs) visitStruct(s, ifn, sfn);
  for (const auto& n : d.nestedInterfaces) visitInterface(n, ifn, sfn);
}
void visitStruct(const StructDecl& s, const std::function<void(const InterfaceDecl&)>* ifn,
                 const std::function<void(const StructDecl&)>* sfn) {
  for (const auto& n : s.nestedStructs) visitStruct(n, ifn, sfn);
  for (const auto& n : s.nestedInterfaces) visitInterface(n, ifn, sfn);
  if (sfn) (*sfn)(s);
}
}  // namespace

void forEachInterface(const FileModel& file, const std::function<void(const InterfaceDecl&)>& fn) {
  for (const auto& s : file.structs) visitStruct(s, &fn, nullptr);
  for (const auto& d : file.interfaces) visitInterface(d, &fn, nullptr);
}

void forEachStruct(const FileModel& file, const std::function<void(const StructDecl&)>& fn) {
  for (const auto& s : file.structs) visitStruct(s, nullptr, &fn);
  for (const auto& d : file.interfaces) visitInterface(d, nullptr, &fn);
}

void sortUnique(std::vector<Diag>& diags) {
  std::sort(diags.begin(), diags.end());
  diags.erase(std::unique(diags.begin(), diags.end()), diags.end());
}

// The scopes from the file down to `id`, each by keyword and name ("struct Outer", "interface
// Inner"), so that a nested declaration's line is searched inside its own parents.
std::vector<ModelBuilder::Step> ModelBuilder::scopeSteps(uint64_t id) const {
  std::vector<Step> steps;
  for (uint64_t at = id; at != 0;) {
    auto n = node(at).getProto();
    if (n.isFile()) break;
    uint64_t parent = n.getScopeId();
    if (parent == 0) break;  // a method's parameter struct
    const char* kind = n.isStruct() ? "struct" : n.isInterface() ? "interface" : n.isEnum() ? "enum" : "";
    std::string name = n.getDisplayName().cStr() + n.getDisplayNamePrefixLength();
    if (*kind != '\0' && !(n.isStruct() && n.getStruct().getIsGroup())) steps.insert(steps.begin(), Step{kind, name});
    at = parent;
  }
  return steps;
}

// The interface a declaration is nested in (at any depth), or 0.
uint64_t ModelBuilder::enclosingInterface(uint64_t id) const {
  for (uint64_t at = node(id).getProto().getScopeId(); at != 0;) {
    auto n = node(at).getProto();
    if (n.isInterface()) return at;
    if (n.isFile()) return 0;
    at = n.getScopeId();
  }
  return 0;
}

// capnp 0.9's CodeGeneratorRequest carries no source positions, so the line of a declaration
// is found by reading the schema text. Display names are relative to where capnp runs, to its
// --src-prefix, or (imported files) to one of its import paths, so those are asked of capnp,
// the plugin's parent. A file that cannot be found gives no lines (messages then name no line).
const std::vector<std::string>& ModelBuilder::sourceLines(uint64_t fileId) const {
  auto cached = sourceLines_.find(fileId);
  if (cached != sourceLines_.end()) return cached->second;
  std::string file = node(fileId).getProto().getDisplayName();
  std::vector<std::string> candidates{file};
  if (!file.empty() && file[0] != '/') {
    const std::string parent = "/proc/" + std::to_string(getppid());
    auto rooted = [&](std::string dir) {
      if (!dir.empty() && dir[0] != '/') dir = parent + "/cwd/" + dir;
      candidates.push_back(dir + "/" + file);
    };
    candidates.push_back(parent + "/cwd/" + file);
    std::ifstream cmdline(parent + "/cmdline", std::ios::binary);
    std::vector<std::string> args;
    for (std::string arg; std::getline(cmdline, arg, '\0');) args.push_back(arg);
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (a.rfind("--src-prefix=", 0) == 0) rooted(a.substr(13));
      if (a.rfind("--import-path=", 0) == 0) rooted(a.substr(14));
      if (a.rfind("-I", 0) == 0) {
        if (a.size() > 2) rooted(a.substr(2));
        else if (i + 1 < args.size()) rooted(args[i + 1]);
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
  return sourceLines_.emplace(fileId, std::move(lines)).first->second;
}

// Each step is searched from where the previous one was found (a member by its name and
// ordinal, which is unique in its scope). A step that is not found keeps the previous line.
int ModelBuilder::lineOf(uint64_t fileId, const std::vector<Step>& path) const {
  if (fileId == 0) return 0;
  const auto& lines = sourceLines(fileId);
  if (lines.empty()) return 0;
  size_t at = 0;
  bool any = false;
  for (const auto& step : path) {
    std::string pattern;
    const std::string ord = step.ordinal >= 0 ? "\\s*@\\s*" + std::to_string(step.ordinal) + "\\b" : "";
    if (step.kind == "interface" || step.kind == "struct" || step.kind == "enum") {
      pattern = "\\b" + step.kind + "\\s+" + step.name + "\\b";
    } else if (step.kind == "method") {
      pattern = "\\b" + step.name + ord;
    } else if (step.kind == "field") {  // "name @3 :T", or a group / union "name :group"
      pattern = "\\b" + step.name + (step.ordinal >= 0 ? ord : "\\s*:\\s*(group|union)\\b");
    } else {  // param / result
      pattern = "\\b" + step.name + "\\s*:";
    }
    std::regex re(pattern);
    size_t from = at;
    if (step.kind == "result") {  // results follow the method's "->"
      while (from < lines.size() && lines[from].find("->") == std::string::npos) ++from;
      if (from == lines.size()) from = at;
    }
    for (size_t i = from; i < lines.size(); ++i) {
      std::string text = lines[i];
      if (i == from && step.kind == "result" && text.find("->") != std::string::npos) text = text.substr(text.find("->"));
      if (std::regex_search(text, re)) {
        at = i;
        any = true;
        break;
      }
    }
  }
  return any ? static_cast<int>(at) + 1 : 0;
}

Diag ModelBuilder::diag(uint64_t fileId, int line, const std::string& text) const {
  return Diag{fileId ? std::string(node(fileId).getProto().getDisplayName()) : std::string("?"), line, text};
}

namespace {

// How the schema spells an AnyPointer type.
std::string anyPointerName(CType::Reader t) {
  auto a = t.getAnyPointer();
  if (!a.isUnconstrained()) return "AnyPointer";
  switch (a.getUnconstrained().which()) {
    case CType::AnyPointer::Unconstrained::STRUCT: return "AnyStruct";
    case CType::AnyPointer::Unconstrained::LIST: return "AnyList";
    case CType::AnyPointer::Unconstrained::CAPABILITY: return "Capability";
    default: return "AnyPointer";
  }
}

}  // namespace

bool ModelBuilder::convertType(CType::Reader t, bool inStruct, const std::string& path, uint64_t fileId, int line,
                               ::lrpc::stubgen::Type& out, std::vector<Diag>& diags) {
  auto fail = [&](const std::string& what) {
    diags.push_back(diag(fileId, line, path + ": " + what));
    return false;
  };
  Kind k;
  if (primitiveKind(t.which(), k)) {
    out.kind = k;
    return true;
  }
  switch (t.which()) {
    case CType::VOID:
      return fail("Void is not supported (it carries nothing: leave it out of the list)");
    case CType::TEXT:
    case CType::DATA:
      out.kind = t.isText() ? Kind::kText : Kind::kData;
      return true;
    case CType::ENUM: {
      auto e = node(t.getEnum().getTypeId()).getProto();
      if (e.getIsGeneric()) return fail("enum " + localPath(e) + " in a generic scope is not supported (declare it outside)");
      out.kind = Kind::kEnum;
      out.id = e.getId();
      out.cppName = cppNameOf(out.id);
      return true;
    }
    case CType::STRUCT: {
      uint64_t id = t.getStruct().getTypeId();
      auto s = node(id).getProto();
      if (s.getIsGeneric() || t.getStruct().getBrand().getScopes().size() > 0) {
        if (!instantiate(t.getStruct(), path, fileId, line, id, diags)) return false;
      }
      if (inProgress_.count(id)) {
        // Reached again while it is being checked: fine through a List (a tree; the C++ member
        // is a std::vector). By value only a generic struct gets here (others are boxed:
        // boxedField), and its instances are laid out per use.
        if (listDepth_ <= listDepthAt_[id]) {
          return fail("generic struct " + localPath(s) +
                      " contains itself (an instance of a generic struct cannot hold itself through lrpc::Box: "
                      "hold it through a List, e.g. List(" + localPath(s) + "), which may be empty)");
        }
        out.kind = Kind::kStruct;
        out.id = id;
        out.cppName = cppNameOf(id);
        out.coded = true;  // a struct on a cycle through a List holds that List
        return true;
      }
      // A refused struct is reported once, where it is declared, not at every use.
      if (!checkStruct(id, diags)) return false;
      out.kind = Kind::kStruct;
      out.id = id;
      out.cppName = cppNameOf(id);
      out.coded = coded_[id];
      out.boolOffsets.clear();
      out.padding.clear();
      if (!out.coded) {  // copied whole: its Bool bytes and padding need care
        boolOffsets(id, 0, out.boolOffsets);
        paddingOf(id, 0, out.padding);
      }
      return true;
    }
    case CType::LIST: {
      auto e = t.getList().getElementType();
      ::lrpc::stubgen::Type elem;
      if (e.isAnyPointer() || e.isVoid()) {
        const std::string what = e.isVoid() ? "List(Void)" : "List(" + anyPointerName(e) + ")";
        return fail(what + " is not supported (lists carry data: primitives, enums, structs, capabilities, Text, "
                           "Data or Lists)");
      }
      ++listDepth_;
      const bool ok = convertType(e, inStruct, path, fileId, line, elem, diags);
      --listDepth_;
      if (!ok) return false;
      out.kind = Kind::kList;
      out.elem = elem.kind;
      out.elemId = elem.id;
      out.cppName = elem.cppName;
      out.boolOffsets = elem.boolOffsets;
      out.padding = elem.padding;
      out.coded = elem.kind == Kind::kList || elem.kind == Kind::kInterface || (elem.kind == Kind::kStruct && elem.coded);
      out.elemType = std::make_shared<const ::lrpc::stubgen::Type>(std::move(elem));
      return true;
    }
    case CType::INTERFACE: {
      auto i = node(t.getInterface().getTypeId()).getProto();
      if (i.getIsGeneric()) return fail("generic interface " + localPath(i) + " as a value is not supported");
      if (!foreignInterfaceOk(i.getId())) {
        return fail("interface " + localPath(i) + " of " + fileOf(i.getId()) +
                    " is not generated there (see that file's errors)");
      }
      out.kind = Kind::kInterface;
      out.id = i.getId();
      out.cppName = cppNameOf(out.id);
      return true;
    }
    case CType::ANY_POINTER: {
      if (t.getAnyPointer().isParameter()) {
        // Inside an instance of a generic struct: the argument it was given (Bind).
        auto p = t.getAnyPointer().getParameter();
        auto it = bindings_.find(p.getScopeId());
        if (it != bindings_.end() && p.getParameterIndex() < it->second.size()) {
          out = it->second[p.getParameterIndex()];
          return true;
        }
      }
      if (t.getAnyPointer().isParameter() || t.getAnyPointer().isImplicitMethodParameter()) {
        return fail("generic parameter type is not supported (a frame needs one concrete layout: use a concrete "
                    "type)");
      }
      const std::string name = anyPointerName(t);
      if (name == "Capability") {
        // runtime/capability.h: a capability of no declared interface, cast by its receiver.
        out.kind = Kind::kInterface;
        out.id = 0;
        out.cppName = "::lrpc::Capability";
        return true;
      }
      return fail(name + " is not supported (a frame needs a type known at generation time: use a concrete type)");
    }
    default:
      return fail("this type is not supported");
  }
}

ModelBuilder::Layout ModelBuilder::layoutOf(const ::lrpc::stubgen::Type& t) const {
  if (isVariable(t)) return {8, 4};  // lrpc::VarRef
  if (t.kind == Kind::kStruct) {
    auto it = layouts_.find(t.id);
    return it == layouts_.end() ? Layout{1, 1} : it->second;
  }
  uint32_t s = primitiveSize(t.kind);
  return {s, s};
}

bool ModelBuilder::reachesByValue(uint64_t from, uint64_t to, std::set<uint64_t>& seen) const {
  if (from == to) return true;
  if (!seen.insert(from).second) return false;
  auto n = node(from).getProto();
  if (!n.isStruct()) return false;
  for (auto f : n.getStruct().getFields()) {
    if (f.isGroup()) {
      if (reachesByValue(f.getGroup().getTypeId(), to, seen)) return true;
      continue;
    }
    auto t = f.getSlot().getType();
    if (t.isStruct() && reachesByValue(t.getStruct().getTypeId(), to, seen)) return true;
  }
  return false;
}

bool ModelBuilder::boxedField(uint64_t ownerId, capnp::schema::Field::Reader f) const {
  if (f.isGroup() || !f.getSlot().getType().isStruct()) return false;
  auto st = f.getSlot().getType().getStruct();
  // Generic structs are laid out per use (instantiate): a cycle through one stays refused.
  if (st.getBrand().getScopes().size() > 0 || node(st.getTypeId()).getProto().getIsGeneric()) return false;
  uint64_t owner = ownerId;  // a group's fields belong to the struct that holds the group
  for (auto n = node(owner).getProto(); n.isStruct() && n.getStruct().getIsGroup(); n = node(owner).getProto()) {
    owner = n.getScopeId();
  }
  std::set<uint64_t> seen;
  return reachesByValue(st.getTypeId(), owner, seen);
}

// Checks a struct (in any file) and computes its layout, once. Its refusals are kept and
// appended to `diags` at each use, so a struct used by many methods is still one line each.
bool ModelBuilder::checkStruct(uint64_t id, std::vector<Diag>& diags) {
  if (auto it = structDiags_.find(id); it != structDiags_.end()) {
    diags.insert(diags.end(), it->second.begin(), it->second.end());
    return it->second.empty();
  }
  auto s = node(id).getProto();
  const std::string name = localPath(s);
  const uint64_t fileId = fileIdOf(id);
  const std::vector<Step> steps = scopeSteps(id);
  if (inProgress_.count(id)) {
    diags.push_back(diag(fileId, lineOf(fileId, steps),
                         name + ": a struct that contains itself is not supported (it would have no fixed size; "
                                "pass the parts as separate values)"));
    return false;
  }
  inProgress_.insert(id);
  listDepthAt_[id] = listDepth_;
  Bind bind(*this, id);
  std::vector<Diag> mine;
  const int structLine = lineOf(fileId, steps);
  const bool instance = instances_.count(id) != 0;
  if (s.getIsGeneric() && !instance) {
    mine.push_back(diag(fileId, structLine,
                        name + ": generic structs are not supported (a frame needs one concrete layout: declare a "
                               "struct with concrete field types)"));
  }
  // A union or a group cannot be flattened into a frame as one fixed C++ struct.
  // (An instance of a generic struct is not flattened either: a frame lays out one per use.)
  bool coded = instance || s.getStruct().getIsGroup() || s.getStruct().getDiscriminantCount() > 0;
  Layout layout{0, 1};
  for (auto f : fieldsInCodeOrder(s, nullptr)) {
    const std::string fname = f.getName();
    std::vector<Step> fsteps = steps;
    fsteps.push_back({"field", fname, f.isGroup() ? -1 : static_cast<int>(f.getOrdinal().getExplicit())});
    const int line = lineOf(fileId, fsteps);
    const std::string path = name + "." + fname;
    if (f.isGroup()) {
      checkStruct(f.getGroup().getTypeId(), mine);
      coded = true;
      continue;
    }
    if (f.getSlot().getType().isVoid()) continue;  // carries nothing: no member
    ::lrpc::stubgen::Type t;
    if (boxedField(id, f)) {
      // Checked on its own unless it is being checked up the stack (the cycle that boxes it).
      const uint64_t sid = f.getSlot().getType().getStruct().getTypeId();
      if (!inProgress_.count(sid) && !checkStruct(sid, mine)) continue;
      t.kind = Kind::kStruct;
      t.id = sid;
      t.cppName = cppNameOf(sid);
      t.coded = true;  // it holds a Box itself
      t.boxed = true;
    } else if (!convertType(f.getSlot().getType(), true, path, fileId, line, t, mine)) {
      continue;
    }
    // A capability inside a value is written and read with the call's capability codec.
    coded = coded || isVariable(t) || t.kind == Kind::kInterface;
    std::string literal, refused;
    if (f.getSlot().getHadExplicitDefault() &&
        !defaultLiteral(t, f.getSlot().getType(), f.getSlot().getDefaultValue(), true, literal, refused)) {
      mine.push_back(diag(fileId, line,
                          path + ": default values that are " + refused +
                                 " are not supported (remove the default and set the field in the caller)"));
      continue;
    }
    uint32_t ignored = 0;
    if (getUInt32Annotation(f.getAnnotations(), kMaxBytesId, ignored)) {
      mine.push_back(diag(fileId, line,
                          path + ": $Lrpc.maxBytes applies only to Text, Data and List parameters and results (a "
                                 "struct field's size is already known: remove it)"));
      continue;
    }
    Layout fl = layoutOf(t);
    layout.size = alignUp(layout.size, fl.align) + fl.size;
    layout.align = std::max(layout.align, fl.align);
  }
  layout.size = std::max<uint32_t>(1, alignUp(layout.size, layout.align));  // as C++ lays it out
  inProgress_.erase(id);
  coded_[id] = coded;
  layouts_[id] = layout;
  sortUnique(mine);
  structDiags_[id] = mine;
  diags.insert(diags.end(), mine.begin(), mine.end());
  return mine.empty();
}

void ModelBuilder::boolOffsets(uint64_t structId, uint32_t base, std::vector<uint32_t>& out) {
  uint32_t offset = 0;
  for (auto f : fieldsInCodeOrder(node(structId).getProto(), nullptr)) {
    ::lrpc::stubgen::Type t;
    std::vector<Diag> ignored;  // the struct passed checkStruct
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

namespace {

// The C++ expression of one element of a List literal of element type `t`.
bool listElementLiteral(const ::lrpc::stubgen::Type& t, capnp::DynamicValue::Reader e, std::string& out,
                        std::string& refused) {
  switch (e.getType()) {
    case capnp::DynamicValue::BOOL: out = e.as<bool>() ? "true" : "false"; return true;
    case capnp::DynamicValue::INT: {
      const int64_t v = e.as<int64_t>();
      out = v == INT64_MIN ? "(-9223372036854775807LL - 1)" : std::to_string(v) + (t.kind == Kind::kInt64 ? "LL" : "");
      return true;
    }
    case capnp::DynamicValue::UINT:
      out = std::to_string(e.as<uint64_t>()) + (t.kind == Kind::kUInt64 ? "ull" : "u");
      return true;
    case capnp::DynamicValue::FLOAT: out = floatLiteral(e.as<double>(), t.kind == Kind::kFloat32); return true;
    case capnp::DynamicValue::TEXT: {
      auto text = e.as<capnp::Text>();
      out = cppStringLiteral(std::string_view(text.cStr(), text.size()));
      return true;
    }
    case capnp::DynamicValue::DATA: {
      auto data = e.as<capnp::Data>();
      out = "std::vector<uint8_t>{";
      for (size_t i = 0; i < data.size(); ++i) out += (i ? ", " : "") + std::to_string(data[i]) + "u";
      out += "}";
      return true;
    }
    case capnp::DynamicValue::ENUM: {
      auto en = e.as<capnp::DynamicEnum>().getEnumerant();
      KJ_IF_MAYBE(known, en) {
        out = t.cppName + "::k" + pascal(known->getProto().getName().cStr());
        return true;
      }
      refused = "numbers outside their enum";
      return false;
    }
    case capnp::DynamicValue::LIST: {
      const ::lrpc::stubgen::Type& inner = *t.elemType;
      out = memberType(t) + "{";
      bool first = true;
      for (auto item : e.as<capnp::DynamicList>()) {
        std::string lit;
        if (!listElementLiteral(inner, item, lit, refused)) return false;
        out += (first ? "" : ", ") + lit;
        first = false;
      }
      out += "}";
      return true;
    }
    default:
      refused = "struct literals";
      return false;
  }
}

}  // namespace

// The C++ expression of a schema default of type `t`. Numbers, Bool, enums and Text become
// literals; for struct fields also Data and List literals (a std::vector initializer); struct
// literals, and Data and List literals on parameters (a default argument would need storage of
// its own for the view), are refused, named in `refused`.
bool ModelBuilder::defaultLiteral(const ::lrpc::stubgen::Type& t, CType::Reader type, schema::Value::Reader v,
                                  bool member, std::string& out, std::string& refused) const {
  switch (v.which()) {
    case schema::Value::BOOL: out = v.getBool() ? "true" : "false"; return true;
    case schema::Value::INT8: out = std::to_string(v.getInt8()); return true;
    case schema::Value::INT16: out = std::to_string(v.getInt16()); return true;
    case schema::Value::INT32: out = std::to_string(v.getInt32()); return true;
    case schema::Value::INT64:
      out = v.getInt64() == INT64_MIN ? "(-9223372036854775807LL - 1)" : std::to_string(v.getInt64()) + "LL";
      return true;
    case schema::Value::UINT8: out = std::to_string(v.getUint8()) + "u"; return true;
    case schema::Value::UINT16: out = std::to_string(v.getUint16()) + "u"; return true;
    case schema::Value::UINT32: out = std::to_string(v.getUint32()) + "u"; return true;
    case schema::Value::UINT64: out = std::to_string(v.getUint64()) + "ull"; return true;
    case schema::Value::FLOAT32: out = floatLiteral(v.getFloat32(), true); return true;
    case schema::Value::FLOAT64: out = floatLiteral(v.getFloat64(), false); return true;
    case schema::Value::ENUM: {
      auto enumerants = node(t.id).getProto().getEnum().getEnumerants();
      if (v.getEnum() >= enumerants.size()) {
        refused = "numbers outside their enum";
        return false;
      }
      out = t.cppName + "::k" + pascal(enumerants[v.getEnum()].getName().cStr());
      return true;
    }
    case schema::Value::TEXT:
      out = cppStringLiteral(std::string_view(v.getText().cStr(), v.getText().size()));
      return true;
    case schema::Value::DATA: {
      if (!member) {
        refused = "Data literals on parameters";
        return false;
      }
      auto data = v.getData();
      out = "std::vector<uint8_t>{";
      for (size_t i = 0; i < data.size(); ++i) out += (i ? ", " : "") + std::to_string(data[i]) + "u";
      out += "}";
      return true;
    }
    case schema::Value::LIST: {
      if (!member) {
        refused = "List literals on parameters";
        return false;
      }
      if (t.kind != Kind::kList || !t.elemType) {
        refused = "List literals of this type";
        return false;
      }
      auto list = v.getList().getAs<capnp::DynamicList>(loader_.getType(type).asList());
      out = memberType(t) + "{";
      bool first = true;
      for (auto item : list) {
        std::string lit;
        if (!listElementLiteral(*t.elemType, item, lit, refused)) return false;
        out += (first ? "" : ", ") + lit;
        first = false;
      }
      out += "}";
      return true;
    }
    case schema::Value::STRUCT: refused = "struct literals"; return false;
    default: refused = "of this kind"; return false;
  }
}

// The gaps C++ leaves between a struct's members and after the last one, as it lays them out.
void ModelBuilder::paddingOf(uint64_t structId, uint32_t base, std::vector<std::pair<uint32_t, uint32_t>>& out) {
  uint32_t offset = 0;
  for (auto f : fieldsInCodeOrder(node(structId).getProto(), nullptr)) {
    ::lrpc::stubgen::Type t;
    std::vector<Diag> ignored;  // the struct passed checkStruct
    if (f.isGroup() || !convertType(f.getSlot().getType(), true, "", 0, 0, t, ignored)) continue;
    Layout fl = layoutOf(t);
    const uint32_t at = alignUp(offset, fl.align);
    if (at != offset) out.emplace_back(base + offset, at - offset);
    if (t.kind == Kind::kStruct) {
      for (auto [o, n] : t.padding) out.emplace_back(base + at + o, n);
    }
    offset = at + fl.size;
  }
  const uint32_t size = layouts_[structId].size;
  if (size > offset) out.emplace_back(base + offset, size - offset);
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

// A field's place in a coded struct's fixed part follows its ordinal, so that a field added
// later (the next ordinal) lands after every existing one. A group goes by its first member.
uint32_t ModelBuilder::ordinalKey(schema::Field::Reader f) const {
  if (!f.isGroup()) return f.getOrdinal().isExplicit() ? f.getOrdinal().getExplicit() : 0xffff;
  uint32_t key = 0xffff;
  for (auto g : node(f.getGroup().getTypeId()).getProto().getStruct().getFields()) key = std::min(key, ordinalKey(g));
  return key;
}

StructDecl ModelBuilder::makeStruct(uint64_t id) {
  auto s = node(id).getProto();
  StructDecl d;
  d.id = id;
  d.name = cppIdent(s.getDisplayName().cStr() + s.getDisplayNamePrefixLength());
  d.cppName = cppNameOf(id);
  if (s.getStruct().getIsGroup()) d.name = d.cppName.substr(d.cppName.rfind("::") + 2);
  d.doc = docOf(s.getId());
  const auto instance = instances_.find(id);
  if (s.getIsGeneric() && instance == instances_.end()) {
    // The class template each use with concrete types specializes (its types nested in it, which
    // are generic too, are not generated).
    for (auto p : s.getParameters()) d.templateParams.push_back(cppIdent(p.getName().cStr()));
    return d;
  }
  if (instance != instances_.end()) {
    d.genericId = instance->second.genericId;
    d.templateArgs = d.cppName.substr(d.cppName.find('<'));
  }
  Bind bind(*this, id);
  std::vector<Diag> why;
  if (checkStruct(id, why)) {
    d.coded = coded_[id];
    std::vector<unsigned> indexes;
    auto fields = fieldsInCodeOrder(s, &indexes);
    std::vector<std::pair<uint32_t, size_t>> byOrdinal;  // coded layout order
    for (size_t i = 0; i < fields.size(); ++i) {
      const bool inUnion = fields[i].getDiscriminantValue() != schema::Field::NO_DISCRIMINANT;
      const bool isVoid = !fields[i].isGroup() && fields[i].getSlot().getType().isVoid();
      if (isVoid && !inUnion) continue;
      Field f;
      f.schemaName = fields[i].getName();
      f.name = cppIdent(f.schemaName);
      f.member = inUnion ? f.name + "_" : f.name;
      f.discriminant = inUnion ? fields[i].getDiscriminantValue() : -1;
      f.isVoid = isVoid;
      f.doc = memberDoc(s.getId(), indexes[i]);
      if (fields[i].isGroup()) {
        const uint64_t gid = fields[i].getGroup().getTypeId();
        f.group = true;
        f.type.kind = Kind::kStruct;
        f.type.id = gid;
        f.type.cppName = cppNameOf(gid);
        f.type.coded = true;
        d.nestedStructs.push_back(makeStruct(gid));
      } else if (!isVoid) {
        std::vector<Diag> ignored;  // checkStruct passed
        convertType(fields[i].getSlot().getType(), true, "", 0, 0, f.type, ignored);
        f.type.boxed = boxedField(id, fields[i]);
        if (fields[i].getSlot().getHadExplicitDefault()) {
          std::string refused;  // checkStruct accepted it
          defaultLiteral(f.type, fields[i].getSlot().getType(), fields[i].getSlot().getDefaultValue(), true,
                         f.defaultValue, refused);
        }
        noteUse(f.type);
      }
      byOrdinal.emplace_back(ordinalKey(fields[i]), d.fields.size());
      d.fields.push_back(std::move(f));
    }
    if (d.coded) {
      // The fixed part in a frame: by ordinal, natural alignment, the union's discriminant
      // (uint16_t) where its first member would go; whole 8-byte words.
      std::stable_sort(byOrdinal.begin(), byOrdinal.end());
      uint32_t offset = 0;
      for (auto [key, i] : byOrdinal) {
        Field& f = d.fields[i];
        if (f.discriminant >= 0 && !d.hasUnion) {
          d.hasUnion = true;
          d.discriminantOffset = alignUp(offset, 2);
          offset = d.discriminantOffset + 2;
        }
        if (f.isVoid) continue;
        Layout fl = layoutOf(f.type);
        f.offset = alignUp(offset, fl.align);
        f.size = fl.size;
        offset = f.offset + fl.size;
      }
      d.size = std::max<uint32_t>(8, alignUp(offset, 8));
      d.align = 8;
    } else {
      uint32_t offset = 0;
      for (auto& f : d.fields) {
        Layout fl = layoutOf(f.type);
        f.offset = alignUp(offset, fl.align);
        f.size = fl.size;
        offset = f.offset + fl.size;
      }
      d.size = layouts_[id].size;
      d.align = layouts_[id].align;
      boolOffsets(id, 0, d.boolOffsets);
      paddingOf(id, 0, d.padding);
    }
  } else {
    sortUnique(why);
    d.refused = why.front().str();
  }
  std::vector<StructDecl> groups = std::move(d.nestedStructs);
  d.nestedStructs.clear();
  if (instance == instances_.end()) collectScope(id, d.nestedEnums, d.nestedStructs, d.nestedInterfaces);
  d.nestedStructs.insert(d.nestedStructs.begin(), groups.begin(), groups.end());
  return d;
}

void ModelBuilder::noteUse(const ::lrpc::stubgen::Type& t) {
  const bool untyped = t.kind == Kind::kInterface && t.id == 0;  // lrpc::Capability: the runtime's
  if ((t.kind == Kind::kEnum || t.kind == Kind::kStruct || t.kind == Kind::kInterface) && !untyped) {
    usedFiles_.insert(fileIdOf(t.id));
  }
  if (t.kind == Kind::kList && t.elemType) noteUse(*t.elemType);
}

namespace {

// Struct ids a struct's fields (and its nested structs' fields) refer to.
void completeDeps(const InterfaceDecl& d, std::set<uint64_t>& deps);

// (By value only: a List's element may be incomplete where the std::vector member is declared.)
void structDeps(const StructDecl& s, std::set<uint64_t>& out) {
  for (const auto& n : s.nestedInterfaces) completeDeps(n, out);
  if (s.genericId != 0) out.insert(s.genericId);  // a specialization follows its template
  for (const auto& f : s.fields) {
    // A Box holds an incomplete struct: its forward declaration is enough.
    if ((f.type.kind == Kind::kStruct && !f.type.boxed) || f.type.kind == Kind::kEnum) out.insert(f.type.id);
  }
  for (const auto& n : s.nestedStructs) structDeps(n, out);
}

bool declares(const InterfaceDecl& d, uint64_t id);

bool declares(const StructDecl& s, uint64_t id) {
  if (s.id == id) return true;
  for (const auto& e : s.nestedEnums) {
    if (e.id == id) return true;
  }
  for (const auto& n : s.nestedStructs) {
    if (declares(n, id)) return true;
  }
  for (const auto& n : s.nestedInterfaces) {
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
  for (const auto& n : d.nestedInterfaces) {
    if (declares(n, id)) return true;
  }
  return false;
}

// The types and bases an interface's struct names: its own methods' and, since their structs
// sit inside it, its nested interfaces'.
void interfaceDeps(const InterfaceDecl& d, std::set<uint64_t>& deps) {
  deps.insert(d.bases.begin(), d.bases.end());
  for (size_t m = d.ownBegin; m < d.methods.size(); ++m) {
    for (const auto* fields : {&d.methods[m].params, &d.methods[m].results}) {
      for (const auto& f : *fields) {
        if (f.type.id) deps.insert(f.type.id);
        if (f.type.elemId) deps.insert(f.type.elemId);
      }
    }
  }
  for (const auto& n : d.nestedInterfaces) interfaceDeps(n, deps);
}

// An interface's stubs name its bases' frames and the types its own methods use: when those
// are declared in (or are) another interface of the same file, that one must come first.
std::vector<InterfaceDecl> dependencyOrder(std::vector<InterfaceDecl> in) {
  std::vector<InterfaceDecl> out;
  std::vector<int> state(in.size(), 0);
  std::function<void(size_t)> visit = [&](size_t i) {
    if (state[i] != 0) return;
    state[i] = 1;
    std::set<uint64_t> deps;
    interfaceDeps(in[i], deps);
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

// What an interface's struct needs complete: its bases, enums anywhere in its frames, structs its
// frames hold by value (flattened ones) and those its several-result structs hold; the same
// for the structs and interfaces nested in it.
void enumIds(const Type& t, std::set<uint64_t>& out) {
  if (t.kind == Kind::kEnum) out.insert(t.id);
  if (t.kind == Kind::kList && t.elemType) enumIds(*t.elemType, out);
}

void completeDeps(const InterfaceDecl& d, std::set<uint64_t>& deps) {
  deps.insert(d.bases.begin(), d.bases.end());
  for (size_t i = d.ownBegin; i < d.methods.size(); ++i) {
    const Method& m = d.methods[i];
    for (const auto* fields : {&m.params, &m.results}) {
      for (const auto& f : *fields) {
        enumIds(f.type, deps);
        // Its Client, held by value (lrpc::Capability's is the runtime's).
        if (f.type.kind == Kind::kInterface && f.type.id != 0) deps.insert(f.type.id);
        const bool held = !isVariable(f.type) || (fields == &m.results && m.results.size() > 1);
        if (f.type.kind == Kind::kStruct && held) deps.insert(f.type.id);
      }
    }
  }
  for (const auto& s : d.nestedStructs) structDeps(s, deps);
  for (const auto& n : d.nestedInterfaces) completeDeps(n, deps);
}

// One order for a file's top-level structs and interfaces, each after what it needs complete
// (a struct may hold a type nested in an interface, an interface's frames a struct). Interfaces
// on a cycle of such needs cannot be laid out in C++: they are returned in `cyclic`.
std::vector<std::pair<bool, size_t>> topLevelOrder(const std::vector<StructDecl>& structs,
                                                   const std::vector<InterfaceDecl>& interfaces,
                                                   std::set<size_t>& cyclic) {
  std::vector<std::pair<bool, size_t>> items, out;
  for (size_t i = 0; i < structs.size(); ++i) items.emplace_back(false, i);
  for (size_t i = 0; i < interfaces.size(); ++i) items.emplace_back(true, i);
  auto declaresId = [&](const std::pair<bool, size_t>& it, uint64_t id) {
    return it.first ? declares(interfaces[it.second], id) : declares(structs[it.second], id);
  };
  std::vector<int> state(items.size(), 0);
  std::vector<size_t> stack;
  std::function<void(size_t)> visit = [&](size_t i) {
    if (state[i] == 2) return;
    if (state[i] == 1) {  // a cycle: every interface from i up the stack is on it
      for (auto at = std::find(stack.begin(), stack.end(), i); at != stack.end(); ++at) {
        if (items[*at].first) cyclic.insert(items[*at].second);
      }
      return;
    }
    state[i] = 1;
    stack.push_back(i);
    std::set<uint64_t> deps;
    if (items[i].first) {
      completeDeps(interfaces[items[i].second], deps);
    } else {
      structDeps(structs[items[i].second], deps);
    }
    for (uint64_t dep : deps) {
      for (size_t j = 0; j < items.size(); ++j) {
        if (j != i && declaresId(items[j], dep)) visit(j);
      }
    }
    stack.pop_back();
    state[i] = 2;
    out.push_back(items[i]);
  };
  for (size_t i = 0; i < items.size(); ++i) visit(i);
  return out;
}

}  // namespace

void ModelBuilder::collectScope(uint64_t scopeId, std::vector<EnumDecl>& enums, std::vector<StructDecl>& structs,
                                std::vector<InterfaceDecl>& interfaces) {
  for (auto nested : node(scopeId).getProto().getNestedNodes()) {
    auto n = node(nested.getId()).getProto();
    switch (n.which()) {
      case Node::ENUM:
        enums.push_back(makeEnum(n.getId()));
        break;
      case Node::STRUCT:
        structs.push_back(makeStruct(n.getId()));
        break;
      case Node::INTERFACE:
        interfaces.push_back(makeInterface(n.getId()));
        break;
      default:  // constants and annotation declarations generate nothing
        break;
    }
  }
  structs = dependencyOrder(std::move(structs));
  interfaces = dependencyOrder(std::move(interfaces));
}

// The parameters (or results) of a method as frame fields. `methodPath` is "Calc.add"; a
// parameter is named "Calc.add(b)", a result "Calc.add -> sum".
bool ModelBuilder::makeFields(uint64_t structId, const std::string& methodPath, bool params, uint64_t fileId,
                              const std::vector<Step>& methodSteps, int methodLine, std::vector<Field>& out,
                              std::vector<Diag>& diags) {
  auto s = node(structId).getProto();
  const char* role = params ? "parameter" : "result";
  if (s.getIsGeneric()) {
    diags.push_back(diag(fileId, methodLine,
                         methodPath + ": generic " + role +
                             " lists are not supported (a frame needs one concrete layout: use concrete types)"));
    return false;
  }
  bool ok = true;
  if (s.getStruct().getDiscriminantCount() > 0) {
    diags.push_back(diag(fileId, methodLine,
                         methodPath + ": unions in a " + role +
                             " list are not supported (a frame has one fixed layout: use separate methods)"));
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
    const std::string path = params ? methodPath + "(" + p.schemaName + ")" : methodPath + " -> " + p.schemaName;
    std::vector<Step> steps = methodSteps;
    steps.push_back({params ? "param" : "result", p.schemaName});
    int line = lineOf(fileId, steps);
    if (line == 0) line = methodLine;
    if (f.isGroup()) {
      diags.push_back(diag(fileId, line,
                           path + ": groups and unions are not supported (a frame has one fixed layout: use "
                                  "separate parameters or a struct)"));
      ok = false;
      continue;
    }
    if (f.getDiscriminantValue() != schema::Field::NO_DISCRIMINANT) continue;  // reported as a union
    if (f.getSlot().getType().isVoid()) continue;  // carries nothing: not in the frame or the C++ call
    if (!convertType(f.getSlot().getType(), false, path, fileId, line, p.type, diags)) {
      ok = false;
      continue;
    }
    // A result always travels, so its default never applies; a parameter's is the client's
    // default argument.
    if (params && f.getSlot().getHadExplicitDefault()) {
      std::string refused;
      if (!defaultLiteral(p.type, f.getSlot().getType(), f.getSlot().getDefaultValue(), false, p.defaultValue,
                          refused)) {
        diags.push_back(diag(fileId, line,
                             path + ": default values that are " + refused +
                                    " are not supported (remove the default and pass the value)"));
        ok = false;
        continue;
      }
    }
    if (getUInt32Annotation(f.getAnnotations(), kMaxBytesId, p.maxBytes) && !isVariable(p.type)) {
      diags.push_back(diag(fileId, line,
                           path + ": $Lrpc.maxBytes applies only to Text, Data and List values (a fixed-size "
                                  "value's size is already known: remove it)"));
      ok = false;
      continue;
    }
    p.inPlace = hasAnnotation(f.getAnnotations(), kInPlaceId);
    if (p.inPlace && (p.type.kind != Kind::kData || !params)) {
      diags.push_back(diag(fileId, line,
                           path + ": $Lrpc.inPlace applies only to Data parameters (anything else is checked, so "
                                  "it must be copied first: remove it)"));
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

// A type spelled out for the signature hash: enums with their enumerants, structs with their
// fields (a struct met again inside itself by its name only), so differing schemas disagree.
std::string ModelBuilder::canonicalType(const ::lrpc::stubgen::Type& t, std::set<uint64_t>& seen) const {
  switch (t.kind) {
    case Kind::kEnum: {
      auto e = node(t.id).getProto();
      std::string s = "Enum(" + localPath(e) + ":";
      for (auto en : e.getEnum().getEnumerants()) s += std::string(en.getName().cStr()) + ",";
      return s + ")";
    }
    case Kind::kStruct: {
      auto n = node(t.id).getProto();
      if (!seen.insert(t.id).second) return "Struct(" + localPath(n) + ")";
      Bind bind(*const_cast<ModelBuilder*>(this), t.id);
      std::string s = "Struct(" + localPath(n) + "{";
      for (auto f : fieldsInCodeOrder(n, nullptr)) {
        if (f.getDiscriminantValue() != schema::Field::NO_DISCRIMINANT) s += "|" + std::to_string(f.getDiscriminantValue());
        if (f.isGroup()) {
          ::lrpc::stubgen::Type g;
          g.kind = Kind::kStruct;
          g.id = f.getGroup().getTypeId();
          s += std::string(f.getName().cStr()) + ":" + canonicalType(g, seen) + ",";
          continue;
        }
        if (f.getSlot().getType().isVoid()) {
          if (f.getDiscriminantValue() != schema::Field::NO_DISCRIMINANT) s += std::string(f.getName().cStr()) + ":Void,";
          continue;
        }
        ::lrpc::stubgen::Type ft;
        std::vector<Diag> ignored;
        const_cast<ModelBuilder*>(this)->convertType(f.getSlot().getType(), true, "", 0, 0, ft, ignored);
        // A coded struct's fixed part is laid out by ordinal, a flattened one's in declaration order.
        const bool coded = coded_.count(t.id) != 0 && coded_.at(t.id);
        s += std::string(f.getName().cStr()) + (coded ? "@" + std::to_string(ordinalKey(f)) : std::string()) + ":" +
             canonicalType(ft, seen) + ",";
      }
      seen.erase(t.id);
      return s + "})";
    }
    case Kind::kInterface:
      if (t.id == 0) return "Capability";
      return "Interface(" + localPath(node(t.id).getProto()) + ")";
    case Kind::kList: {
      if (t.elemType) return "List(" + canonicalType(*t.elemType, seen) + ")";
      ::lrpc::stubgen::Type e;
      e.kind = t.elem;
      e.id = t.elemId;
      return "List(" + canonicalType(e, seen) + ")";
    }
    default:
      return primitiveName(t.kind);
  }
}

// The interfaces `ifaceId` extends, transitively, in the order addMethods meets them (generic
// ones are refused there, so they are left out here).
void ModelBuilder::collectBases(uint64_t ifaceId, std::vector<uint64_t>& out) const {
  for (auto sup : node(ifaceId).getProto().getInterface().getSuperclasses()) {
    if (sup.getBrand().getScopes().size() > 0 || node(sup.getId()).getProto().getIsGeneric()) continue;
    if (std::find(out.begin(), out.end(), sup.getId()) != out.end()) continue;
    out.push_back(sup.getId());
    collectBases(sup.getId(), out);
  }
}

void ModelBuilder::addOtherBases(InterfaceDecl& d) const {
  std::vector<uint64_t> all;
  collectBases(d.id, all);
  for (uint64_t b : all) {
    auto onPrefix = [b](const auto& p) { return p.first == b; };
    if (std::any_of(d.prefixBases.begin(), d.prefixBases.end(), onPrefix)) continue;
    InterfaceDecl::OtherBase o;
    o.id = b;
    o.cppName = cppNameOf(b);
    std::vector<uint64_t> below;
    collectBases(b, below);
    o.scopes.insert(o.cppName);
    for (uint64_t x : below) o.scopes.insert(cppNameOf(x));
    d.otherBases.push_back(std::move(o));
  }
}

void ModelBuilder::addMethods(uint64_t ifaceId, std::set<uint64_t>& seen, std::vector<Method>& out,
                              std::vector<Diag>& diags) {
  if (!seen.insert(ifaceId).second) return;  // a diamond: each interface's methods once
  auto iface = node(ifaceId).getProto();
  const std::string ifaceLocal = localPath(iface);
  const uint64_t fileId = fileIdOf(ifaceId);
  const std::vector<Step> ifaceSteps = scopeSteps(ifaceId);
  for (auto sup : iface.getInterface().getSuperclasses()) {
    if (sup.getBrand().getScopes().size() > 0 || node(sup.getId()).getProto().getIsGeneric()) {
      diags.push_back(diag(fileId, lineOf(fileId, ifaceSteps),
                           ifaceLocal + ": extending a generic interface is not supported (a frame needs one "
                                        "concrete layout: extend a non-generic interface)"));
      continue;
    }
    usedFiles_.insert(fileIdOf(sup.getId()));
    if (ifaceId == rootId_) rootBases_.push_back(sup.getId());
    addMethods(sup.getId(), seen, out, diags);
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
    std::vector<Step> steps = ifaceSteps;
    steps.push_back({"method", d.schemaName, static_cast<int>(i)});
    const int line = lineOf(fileId, steps);
    const std::string& path = d.qualifiedName;
    static const std::set<std::string> kReserved = {"dispatch", "binding", "withOptions", "procedures",
                                                    "descriptor", "procedureCount", "serve", "async"};
    if (kReserved.count(d.schemaName)) {
      diags.push_back(diag(fileId, line,
                           path + ": the method name '" + d.schemaName +
                               "' is reserved by the generated Client/Server classes (rename the method)"));
    }
    for (const auto& other : out) {
      if (other.schemaName == d.schemaName) {
        diags.push_back(diag(fileId, line,
                             path + ": in interface " + rootInterface_ + ", the name clashes with method " +
                                 other.qualifiedName +
                                 " (an interface and all its bases share one C++ class: rename one of them)"));
      }
    }
    if (m.getImplicitParameters().size() > 0) {
      diags.push_back(diag(fileId, line,
                           path + ": generic methods are not supported (a frame needs one concrete layout: use "
                                  "concrete types)"));
      continue;
    }
    // `-> stream` names capnp's empty StreamResult: a call with no results (idl/README.md says
    // what lrpc keeps of streaming: the order of synchronous calls, flow control by A-stacks or
    // the window, and not the order of overlapping asynchronous ones).
    d.stream = m.getResultStructType() == kStreamResultId;
    bool ok = makeFields(m.getParamStructType(), path, true, fileId, steps, line, d.params, diags);
    if (!d.stream) ok = makeFields(m.getResultStructType(), path, false, fileId, steps, line, d.results, diags) && ok;
    if (!ok) continue;
    auto frame = [&](const std::vector<Field>& fs, uint32_t& size, uint32_t& align) {
      uint32_t end = 0;
      for (const auto& f : fs) {
        end = f.offset + f.size;
        align = std::max(align, layoutOf(f.type).align);
        d.variable = d.variable || isVariable(f.type);
      }
      size = alignUp(end, align);
    };
    frame(d.params, d.argsSize, d.argsAlign);
    frame(d.results, d.resultsSize, d.resultsAlign);
    getUInt32Annotation(m.getAnnotations(), kAstacksId, d.astackCount);
    // A nesting limit of 0 would refuse every nested value: reported once, where it is written.
    uint32_t ifaceDepth = 0;
    if (getUInt32Annotation(iface.getAnnotations(), kMaxDepthId, ifaceDepth)) {
      d.maxDepth = ifaceDepth;
      if (ifaceDepth == 0) {
        diags.push_back(diag(fileId, lineOf(fileId, ifaceSteps),
                             ifaceLocal + ": $Lrpc.maxDepth(0) admits no nested value (remove it, or give 1 or more)"));
      }
    }
    if (getUInt32Annotation(m.getAnnotations(), kMaxDepthId, d.maxDepth) && d.maxDepth == 0) {
      diags.push_back(diag(fileId, line,
                           path + ": $Lrpc.maxDepth(0) admits no nested value (remove it, or give 1 or more)"));
    }
    d.views = hasAnnotation(m.getAnnotations(), kViewsId) || hasAnnotation(iface.getAnnotations(), kViewsId);
    d.deferred = hasAnnotation(m.getAnnotations(), kDeferredId) || hasAnnotation(iface.getAnnotations(), kDeferredId);
    if (d.views && std::any_of(d.params.begin(), d.params.end(), [](const Field& p) { return p.inPlace; })) {
      diags.push_back(diag(fileId, line,
                           path + ": $Lrpc.inPlace and $Lrpc.views together (a view already reads the server's "
                                  "private copy in place: remove $Lrpc.inPlace)"));
    }
    if (d.astackCount == 0) {
      diags.push_back(diag(fileId, line,
                           path + ": $Lrpc.astacks(0) leaves no A-stack to call it with (remove it, or give 1 or "
                                  "more)"));
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

InterfaceDecl ModelBuilder::makeInterface(uint64_t id) {
  auto n = node(id).getProto();
  InterfaceDecl d;
  d.id = id;
  d.name = cppIdent(n.getDisplayName().cStr() + n.getDisplayNamePrefixLength());
  d.cppName = cppNameOf(id);
  const std::string path = localPath(n);
  for (size_t pos = 0; pos <= path.size();) {
    size_t end = std::min(path.find('.', pos), path.size());
    d.relName += (pos ? "::" : "") + cppIdent(path.substr(pos, end - pos));
    pos = end + 1;
  }
  d.descriptorName = baseNameOf(fileOf(id)) + ".capnp:" + path;
  d.doc = docOf(id);
  d.file = fileOf(id);
  d.line = lineOf(fileIdOf(id), scopeSteps(id));
  if (n.getIsGeneric()) {
    d.refusals.push_back(diag(fileIdOf(id), d.line,
                              localPath(n) + ": generic interfaces are not supported (a frame needs one concrete "
                                             "layout: use concrete types)"));
  } else {
    std::set<uint64_t> seen;
    std::vector<Method> all;
    rootInterface_ = localPath(n);
    rootId_ = id;
    rootBases_.clear();
    addMethods(id, seen, all, d.refusals);
    d.bases = rootBases_;
    // addMethods flattens a first base before anything else, the same way at every level.
    for (auto b = n;;) {
      auto sups = b.getInterface().getSuperclasses();
      if (sups.size() == 0 || sups[0].getBrand().getScopes().size() > 0) break;
      b = node(sups[0].getId()).getProto();
      if (b.getIsGeneric()) break;
      d.prefixBases.emplace_back(b.getId(), cppNameOf(b.getId()));
    }
    addOtherBases(d);
    const std::string self = d.cppName;
    std::string signature;
    for (size_t i = 0; i < all.size(); ++i) {
      all[i].index = static_cast<uint32_t>(i);
      all[i].inherited = all[i].frameScope != self;
      signature += all[i].schemaName + "@" + std::to_string(all[i].ordinal) + "(";
      std::set<uint64_t> inside;
      for (const auto& p : all[i].params) signature += p.schemaName + ":" + canonicalType(p.type, inside) + ",";
      signature += ")->(";
      for (const auto& r : all[i].results) signature += r.schemaName + ":" + canonicalType(r.type, inside) + ",";
      signature += ");";
    }
    d.ownBegin = static_cast<size_t>(
        std::find_if(all.begin(), all.end(), [](const Method& m) { return !m.inherited; }) - all.begin());
    // Inherited methods all come first (depth-first, bases before the interface itself).
    d.methods = std::move(all);
    d.signatureHash = fnv1a64(signature);
    for (const auto& m : d.methods) {
      for (const auto* fields : {&m.params, &m.results}) {
        for (const auto& f : *fields) d.carriesCaps = d.carriesCaps || holdsCaps(f.type);
      }
    }
  }
  collectScope(id, d.nestedEnums, d.nestedStructs, d.nestedInterfaces);
  for (auto nested : n.getNestedNodes()) {
    const std::string nestedName = nested.getName();
    if (nestedName == "Client" || nestedName == "Server") {
      d.refusals.push_back(diag(fileIdOf(id), d.line,
                                localPath(n) + ": a nested type named " + nestedName + " clashes with the generated " +
                                    d.name + "::" + nestedName + " (rename the nested type)"));
    }
  }
  sortUnique(d.refusals);
  return d;
}

bool ModelBuilder::holdsCaps(const ::lrpc::stubgen::Type& t) const {
  if (t.kind == Kind::kInterface) return true;
  if (t.kind == Kind::kList) return t.elemType && holdsCaps(*t.elemType);
  std::set<uint64_t> seen;
  return t.kind == Kind::kStruct && structHoldsCaps(t.id, seen);
}

bool ModelBuilder::schemaHoldsCaps(CType::Reader t, std::set<uint64_t>& seen) const {
  if (t.isInterface()) return true;
  if (t.isList()) return schemaHoldsCaps(t.getList().getElementType(), seen);
  if (t.isStruct()) return structHoldsCaps(t.getStruct().getTypeId(), seen);
  return false;
}

bool ModelBuilder::structHoldsCaps(uint64_t id, std::set<uint64_t>& seen) const {
  if (!seen.insert(id).second) return false;
  if (auto it = instances_.find(id); it != instances_.end()) {
    for (const auto& a : it->second.args) {
      if (holdsCaps(a)) return true;
    }
    id = it->second.genericId;
  }
  auto n = loader_.get(id).getProto();
  if (!n.isStruct()) return false;
  for (auto f : n.getStruct().getFields()) {
    if (f.isGroup() ? structHoldsCaps(f.getGroup().getTypeId(), seen) : schemaHoldsCaps(f.getSlot().getType(), seen)) {
      return true;
    }
  }
  return false;
}

bool ModelBuilder::foreignInterfaceOk(uint64_t id) {
  if (fileIdOf(id) == buildFileId_ || checking_->count(id) != 0) return true;  // (mutual references)
  if (auto it = foreignOk_.find(id); it != foreignOk_.end()) return it->second;
  bool ok = false;
  checking_->insert(id);
  try {
    // Only the interface itself: building its whole file would reach nodes the request may
    // not hold (capnp sends what the requested file's imports use).
    ModelBuilder other(loader_, request_);
    other.checking_ = checking_;
    other.buildFileId_ = fileIdOf(id);
    ok = other.makeInterface(id).refusals.empty();
  } catch (...) {
    ok = false;
  }
  checking_->erase(id);
  foreignOk_[id] = ok;
  return ok;
}

FileModel ModelBuilder::build(uint64_t fileId) {
  FileModel m;
  auto f = node(fileId).getProto();
  m.sourceName = f.getDisplayName();
  m.baseName = baseNameOf(m.sourceName);
  for (auto a : f.getAnnotations()) {
    if (a.getId() == kCxxNamespaceId && a.getValue().isText()) m.cppNamespace = a.getValue().getText();
  }
  m.doc = docOf(fileId);
  buildFileId_ = fileId;
  collectScope(fileId, m.enums, m.structs, m.interfaces);
  // Each generic struct's uses with concrete types, among the file's structs in dependency
  // order (making one may find more: Pair(Text, Box(Text))).
  for (size_t i = 0; i < instanceOrder_.size(); ++i) m.structs.push_back(makeStruct(instanceOrder_[i]));
  if (!instanceOrder_.empty()) m.structs = dependencyOrder(std::move(m.structs));
  // An interface whose base is refused is refused too: its stubs name the base's frames.
  for (bool changed = true; changed;) {
    changed = false;
    for (auto& d : m.interfaces) {
      if (!d.refusals.empty()) continue;
      for (const auto& base : m.interfaces) {
        if (base.refusals.empty() || std::find(d.bases.begin(), d.bases.end(), base.id) == d.bases.end()) continue;
        d.refusals.push_back(diag(fileId, d.line, localPath(node(d.id).getProto()) + ": extends " +
                                                      localPath(node(base.id).getProto()) +
                                                      ", which is not generated (see its errors)"));
        changed = true;
        break;
      }
    }
  }
  // An interface that passes a capability of a refused interface of this file is refused too:
  // its stubs name that interface's Client.
  for (bool changed = true; changed;) {
    changed = false;
    for (auto& d : m.interfaces) {
      if (!d.refusals.empty() || !d.carriesCaps) continue;
      for (const auto& other : m.interfaces) {
        if (other.refusals.empty()) continue;
        bool uses = false;
        for (const auto& me : d.methods) {
          for (const auto* fields : {&me.params, &me.results}) {
            for (const auto& fl : *fields) uses = uses || (fl.type.kind == Kind::kInterface && fl.type.id == other.id);
          }
        }
        if (!uses) continue;
        d.refusals.push_back(diag(fileId, d.line, localPath(node(d.id).getProto()) + ": passes " +
                                                      localPath(node(other.id).getProto()) +
                                                      ", which is not generated (see its errors)"));
        changed = true;
        break;
      }
    }
  }
  std::set<size_t> cyclic;
  m.order = topLevelOrder(m.structs, m.interfaces, cyclic);
  for (size_t i : cyclic) {
    InterfaceDecl& d = m.interfaces[i];
    d.refusals.push_back(diag(fileId, d.line, localPath(node(d.id).getProto()) +
                                                  ": its frames hold a file-scope struct that itself holds a type "
                                                  "nested in it, so neither can be declared first in C++ (declare "
                                                  "that nested type at file scope)"));
  }
  for (uint64_t used : usedFiles_) {
    if (used != 0 && used != fileId) m.includes.push_back(baseNameOf(node(used).getProto().getDisplayName()) + ".lrpc.h");
  }
  std::sort(m.includes.begin(), m.includes.end());
  m.includes.erase(std::unique(m.includes.begin(), m.includes.end()), m.includes.end());
  return m;
}

}  // namespace lrpc::stubgen
