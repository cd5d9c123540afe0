// A capnp type as lrpc carries it (convertType), or the reason it is refused; and a type
// spelled out for the signature hash.
#include "stubgen/model_parts.h"

#include "stubgen/cpp_text.h"
#include "stubgen/names.h"

namespace lrpc::stubgen {

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
  if (const Scalar* s = scalarOf(t.which())) {
    out.kind = s->kind;
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
    case Kind::kText:
      return "Text";
    case Kind::kData:
      return "Data";
    default:
      return scalarOf(t.kind) != nullptr ? scalarOf(t.kind)->schemaName : "?";
  }
}
}  // namespace lrpc::stubgen
