// The model of one schema file, built from capnp's CodeGeneratorRequest: the builder's frame
// (generic instances, C++ names, traversal, build()) and the schema readers its parts share.
// The parts, by role: schema_source.cc (where a declaration is: file, line, doc comment),
// type_convert.cc (a capnp type as lrpc supports it, or why not), struct_layout.cc (sizes,
// checks and padding), default_literal.cc (schema defaults as C++), struct_model.cc,
// interface_model.cc (methods, frames, bases, capabilities), declaration_order.cc.
#include "stubgen/model_parts.h"

#include <algorithm>
#include <functional>

#include "stubgen/cpp_text.h"
#include "stubgen/names.h"

namespace lrpc::stubgen {

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
            for (const auto& fl : *fields) uses = uses || (isCapability(fl.type) && fl.type.id == other.id);
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
