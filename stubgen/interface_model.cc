// The model of an interface: its methods (with those of every base, in PDL order), their
// parameter and result frames, and which of its types carry capabilities.
#include "stubgen/model_parts.h"

#include <algorithm>

#include "stubgen/cpp_text.h"
#include "stubgen/names.h"

namespace lrpc::stubgen {

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
    if (p.inPlace && (!isBytes(p.type) || !params)) {
      diags.push_back(diag(fileId, line,
                           path + ": $Lrpc.inPlace applies only to Data parameters (anything else is checked, so "
                                  "it must be copied first: remove it)"));
      ok = false;
      continue;
    }
    p.progressive = hasAnnotation(f.getAnnotations(), kProgressiveId);
    if (p.progressive && !p.inPlace) {
      diags.push_back(diag(fileId, line,
                           path + ": $Lrpc.progressive applies only to $Lrpc.inPlace parameters (a copied "
                                  "argument is whole before the handler runs: add $Lrpc.inPlace or remove it)"));
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
  InterfaceDecl d = named<InterfaceDecl>(id);
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
  if (isCapability(t)) return true;
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
}  // namespace lrpc::stubgen
