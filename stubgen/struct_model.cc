// The model of a struct or enum declared in the schema: its fields as C++ members, its layout,
// and the types of other files it makes the generated file include.
#include "stubgen/model_parts.h"

#include "stubgen/cpp_text.h"
#include "stubgen/names.h"

namespace lrpc::stubgen {

EnumDecl ModelBuilder::makeEnum(uint64_t id) {
  auto e = node(id).getProto();
  EnumDecl d = named<EnumDecl>(id);
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
  StructDecl d = named<StructDecl>(id);
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
}  // namespace lrpc::stubgen
