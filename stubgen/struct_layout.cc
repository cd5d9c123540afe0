// How a struct lies in a frame: its size and alignment, the checks that refuse what cannot be
// laid out, where its Bools sit (validated on receipt) and the gaps C++ leaves (zeroed).
#include "stubgen/model_parts.h"

namespace lrpc::stubgen {

ModelBuilder::Layout ModelBuilder::layoutOf(const ::lrpc::stubgen::Type& t) const {
  if (isVariable(t)) return {8, 4};  // lrpc::VarRef
  if (t.kind == Kind::kStruct) {
    auto it = layouts_.find(t.id);
    return it == layouts_.end() ? Layout{1, 1} : it->second;
  }
  uint32_t s = fixedSize(t.kind);
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
    coded = coded || isVariable(t) || isCapability(t);
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

// A checked struct's members that have a C++ layout, each with its offset as C++ places it.
std::vector<std::pair<::lrpc::stubgen::Type, uint32_t>> ModelBuilder::membersAt(uint64_t structId) {
  std::vector<std::pair<::lrpc::stubgen::Type, uint32_t>> out;
  uint32_t end = 0;
  for (auto f : fieldsInCodeOrder(node(structId).getProto(), nullptr)) {
    ::lrpc::stubgen::Type t;
    std::vector<Diag> ignored;  // the struct passed checkStruct
    if (f.isGroup() || !convertType(f.getSlot().getType(), true, "", 0, 0, t, ignored)) continue;
    const Layout fl = layoutOf(t);
    const uint32_t at = alignUp(end, fl.align);
    end = at + fl.size;
    out.emplace_back(std::move(t), at);
  }
  return out;
}

void ModelBuilder::boolOffsets(uint64_t structId, uint32_t base, std::vector<uint32_t>& out) {
  for (const auto& [t, at] : membersAt(structId)) {
    for (uint32_t o : boolBytes(t)) out.push_back(base + at + o);
  }
}

// The gaps C++ leaves between a struct's members and after the last one, as it lays them out.
void ModelBuilder::paddingOf(uint64_t structId, uint32_t base, std::vector<std::pair<uint32_t, uint32_t>>& out) {
  uint32_t end = 0;
  for (const auto& [t, at] : membersAt(structId)) {
    if (at != end) out.emplace_back(base + end, at - end);
    for (auto [o, n] : paddingInside(t)) out.emplace_back(base + at + o, n);
    end = at + layoutOf(t).size;
  }
  const uint32_t size = layouts_[structId].size;
  if (size > end) out.emplace_back(base + end, size - end);
}
}  // namespace lrpc::stubgen
