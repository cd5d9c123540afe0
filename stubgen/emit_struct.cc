#include "stubgen/emit_struct.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "stubgen/cpp_text.h"
#include "stubgen/names.h"
#include "stubgen/type_rules.h"
#include "stubgen/value_code.h"

namespace lrpc::stubgen {
namespace {

std::vector<const Field*> unionMembers(const StructDecl& s) {
  std::vector<const Field*> out;
  for (const auto& f : s.fields) {
    if (f.discriminant >= 0) out.push_back(&f);
  }
  std::sort(out.begin(), out.end(), [](const Field* a, const Field* b) { return a->discriminant < b->discriminant; });
  return out;
}

std::string whichName(const StructDecl& s, const Field& f) { return s.cppName + "::Which::k" + pascal(f.schemaName); }

// A member's initializer: the schema's default, else a value-initialized one, so that a
// fresh value holds every default (a reader leaves the fields an older writer did not send).
// (Strings and vectors start empty without one; an initializer would make clang instantiate
// the vector's destructor where its element type may still be incomplete.)
std::string initializer(const Field& f) {
  if (!f.defaultValue.empty()) return " = " + f.defaultValue;
  return startsEmpty(f.type) ? "" : "{}";
}

void emitCodedMembers(const StructDecl& s, int in, std::string& out) {
  const std::string I = ind(in);
  const auto members = unionMembers(s);
  if (!members.empty()) {
    out += I + "// Which member of the union is set.\n";
    out += I + "enum class Which : uint16_t {\n";
    for (const Field* f : members) {
      out += I + "  k" + pascal(f->schemaName) + " = " + std::to_string(f->discriminant) + ",\n";
    }
    out += I + "};\n";
  }
  for (const auto& f : s.fields) {
    if (f.discriminant >= 0) continue;
    out += docLines(f.doc, in);
    out += I + memberType(f.type) + " " + f.member + initializer(f) + ";\n";
  }
  if (members.empty()) return;
  out += "\n" + I + "// The union, with capnp's accessors: only the member which() names travels.\n";
  out += I + "Which which() const noexcept { return which_; }\n";
  for (const Field* f : members) {
    const std::string P = pascal(f->schemaName);
    out += docLines(f->doc, in);
    out += I + "bool is" + P + "() const noexcept { return which_ == Which::k" + P + "; }\n";
    if (f->isVoid) {
      out += I + "void set" + P + "() noexcept { which_ = Which::k" + P + "; }\n";
      continue;
    }
    const std::string T = memberType(f->type);
    // set and init are defined after every struct (emitCodecFunctions): T may be a std::vector
    // of a struct that is still incomplete here.
    out += I + "const " + T + "& get" + P + "() const noexcept { return " + f->member + "; }\n";
    out += I + "void set" + P + "(" + T + " value);\n";
    out += I + "// Sets the member to its empty value and returns it, to fill in.\n";
    out += I + T + "& init" + P + "();\n";
  }
  out += I + "// Storage of the union (use the accessors).\n";
  out += I + "Which which_ = Which::k" + pascal(members.front()->schemaName) + ";\n";
  for (const Field* f : members) {
    if (!f->isVoid) out += I + memberType(f->type) + " " + f->member + initializer(*f) + ";\n";
  }
}

// A switch over the union's members, a case each: `label` is its case label, `body` writes its
// statements (indented for a case), `otherwise` is the default's.
void emitMemberSwitch(const std::vector<const Field*>& members, const std::string& on,
                      const std::function<std::string(const Field&)>& label,
                      const std::function<void(const Field&)>& body, const std::string& otherwise,
                      std::string& out) {
  out += "  switch (" + on + ") {\n";
  for (const Field* f : members) {
    out += "    case " + label(*f) + ":\n";
    body(*f);
    out += "      break;\n";
  }
  out += "    default: " + otherwise + "\n";
  out += "  }\n";
}

// `view`: the functions for S::View, whose members have the same names (their union setters are
// defined in the class).
// The union setters go to `header` (inline), the codec functions to `out` (the source file).
void emitCodedDefinitions(const StructDecl& s, bool view, std::string& header, std::string& out) {
  const std::string S = s.cppName + (view ? "::View" : "");
  const std::string F = std::to_string(s.size);
  const auto members = unionMembers(s);
  for (const Field* f : members) {
    if (f->isVoid || view) continue;
    const std::string P = pascal(f->schemaName);
    const std::string T = memberType(f->type);
    header += "inline void " + S + "::set" + P + "(" + T + " value) {\n";
    header += "  which_ = Which::k" + P + ";\n";
    header += "  " + f->member + " = std::move(value);\n";
    header += "}\n";
    header += "inline " + T + "& " + S + "::init" + P + "() {\n";
    header += "  which_ = Which::k" + P + ";\n";
    header += "  " + f->member + " = " + T + "{};\n";
    header += "  return " + f->member + ";\n";
    header += "}\n\n";
  }
  const bool anyVarMember = std::any_of(members.begin(), members.end(), [](const Field* f) { return isVariable(f->type); });

  const bool anyVar = anyVarMember || std::any_of(s.fields.begin(), s.fields.end(), [](const Field& f) {
                        return f.discriminant < 0 && isVariable(f.type);
                      });
  out += "uint64_t lrpcSize(const " + S + "& " + (anyVar ? "v_, uint32_t depth_" : ", uint32_t") +
         ") noexcept {\n";
  out += "  uint64_t n_ = " + F + ";\n";
  for (const auto& f : s.fields) {
    if (f.discriminant < 0 && isVariable(f.type)) {
      out += "  n_ = ::lrpc::codec::addChild(n_, ::lrpc::codec::size(v_." + f.member + ", depth_));\n";
    }
  }
  if (anyVarMember) {
    out += "  switch (v_.which_) {\n";
    for (const Field* f : members) {
      if (!isVariable(f->type)) continue;
      out += "    case " + whichName(s, *f) + ": n_ = ::lrpc::codec::addChild(n_, ::lrpc::codec::size(v_." +
             f->member + ", depth_)); break;\n";
    }
    out += "    default: break;\n";
    out += "  }\n";
  }
  out += "  return n_;\n";
  out += "}\n\n";

  const bool anyCapOrVar = anyVar || std::any_of(s.fields.begin(), s.fields.end(), [](const Field& f) {
                            return isCapability(f.type);
                          });
  out += "uint64_t lrpcPut(std::byte* t_, uint64_t at_, const " + S + "& v_, ::lrpc::codec::CapCodec*" +
         (anyCapOrVar ? " caps_" : "") + ") noexcept {\n";
  out += "  std::byte* f_ = t_ + at_;\n";
  out += "  std::memset(f_, 0, " + F + ");  // gaps and fields not set\n";
  out += "  uint64_t end_ = at_ + " + F + ";\n";
  for (const auto& f : s.fields) {
    if (f.discriminant < 0) emitCodecPut(f, "  ", out);
  }
  if (!members.empty()) {
    out += "  const uint16_t w_ = static_cast<uint16_t>(v_.which_);\n";
    out += "  std::memcpy(f_ + " + std::to_string(s.discriminantOffset) + ", &w_, sizeof w_);\n";
    emitMemberSwitch(
        members, "v_.which_", [&](const Field& f) { return whichName(s, f); },
        [&](const Field& f) { emitCodecPut(f, "      ", out); },
        "break;  // a value no reader accepts: the peer answers kBadFrame", out);
  }
  out += "  return end_;\n";
  out += "}\n\n";

  out += "bool lrpcGet(::lrpc::codec::Reader& r_, ::lrpc::VarRef ref_, " + S + "& out_) {\n";
  out += "  if (!r_.enter(ref_, 1)) return false;\n";
  out += "  // The fixed part, copied once (the tail may be shared memory a peer still writes).\n";
  out += "  alignas(8) std::byte f_[" + F + "] = {};\n";
  out += "  const uint32_t n_ = ref_.length < " + F + " ? ref_.length : " + F + ";\n";
  out += "  if (n_ != 0) std::memcpy(f_, r_.at(ref_), n_);  // (an empty tail has no data pointer)\n";
  for (const auto& f : s.fields) {
    if (f.discriminant < 0) emitCodecGet(f, "  ", out);
  }
  if (!members.empty()) {
    out += "  uint16_t w_ = 0;\n";
    out += "  if (n_ >= " + std::to_string(s.discriminantOffset + 2) + ") std::memcpy(&w_, f_ + " +
           std::to_string(s.discriminantOffset) + ", sizeof w_);\n";
    emitMemberSwitch(
        members, "w_", [](const Field& f) { return std::to_string(f.discriminant); },
        [&](const Field& f) {
          out += "      out_.which_ = " + whichName(s, f) + ";\n";
          emitCodecGet(f, "      ", out);
        },
        "return false;  // a member this schema does not have", out);
  }
  out += "  r_.leave();\n";
  out += "  return true;\n";
  out += "}\n\n";
}

// lrpcViewOf and lrpcOwnedOf: member by member through runtime/codec_view.h (of a union, the
// member which() names).
void emitConversions(const StructDecl& s, std::string& out) {
  const std::string S = s.cppName;
  const auto members = unionMembers(s);
  auto body = [&](const char* fn, const char* extra) {
    for (const auto& f : s.fields) {
      if (f.discriminant < 0 && !f.isVoid) {
        out += "  out_." + f.member + " = ::lrpc::codec::" + fn + "(v_." + f.member + extra + ");\n";
      }
    }
    if (members.empty()) return;
    out += "  out_.which_ = v_.which_;\n";
    out += "  switch (v_.which_) {\n";
    for (const Field* f : members) {
      if (f->isVoid) continue;
      out += "    case " + whichName(s, *f) + ": out_." + f->member + " = ::lrpc::codec::" + fn + "(v_." + f->member +
             extra + "); break;\n";
    }
    out += "    default: break;\n";
    out += "  }\n";
  };
  out += S + "::View lrpcViewOf(const " + S + "& v_, ::lrpc::ViewArena& a_) {\n";
  out += "  static_cast<void>(a_);  // (a struct of numbers needs none)\n";
  out += "  " + S + "::View out_;\n";
  body("viewOf", ", a_");
  out += "  return out_;\n";
  out += "}\n\n";
  out += S + " lrpcOwnedOf(const " + S + "::View& v_) {\n";
  out += "  " + S + " out_;\n";
  body("ownedOf", "");
  out += "  return out_;\n";
  out += "}\n\n";
}

// A View member's initializer: the schema's default where a view can hold it (a Data or List
// default is a constant kept alive by the Frozen it views), else a value-initialized one.
// Such a constant is made by a function in the source file, so that the header does not need
// runtime/codec_view.h; `source` receives it, `scope` names the View ("::ns::S::View").
std::string viewInitializer(const Field& f, const std::string& scope, std::string& source) {
  if (f.defaultValue.empty()) return "{}";
  if (viewDefaultIsStored(f)) {
    const std::string fn = "lrpcDefault_" + f.member;
    source += "auto " + scope + "::" + fn + "() -> " + viewType(f.type) + " {\n";
    source += "  static const ::lrpc::codec::Frozen<" + memberType(f.type) + "> d_{" + f.defaultValue + "};\n";
    source += "  return d_.view();\n}\n\n";
    return " = " + fn + "()";
  }
  return " = " + f.defaultValue;
}

// The declaration of the function viewInitializer() writes for `f`, if it writes one.
std::string viewDefaultDecl(const Field& f) {
  if (viewDefaultIsStored(f)) {
    return "  static " + viewType(f.type) + " lrpcDefault_" + f.member + "();  // the schema's default\n";
  }
  return "";
}

// S::View for one coded struct; `rel` is S's name inside the file's namespace.
void emitView(const StructDecl& s, const std::string& rel, std::string& out, std::string& source) {
  const auto members = unionMembers(s);
  out += "// " + rel + " as views: to pass without building owning containers, and what a handler\n";
  out += "// of a method with $Lrpc.views receives (idl/README.md, \"Views\").\n";
  out += "struct " + rel + "::View {\n";
  out += "  using Owned = " + s.cppName + ";\n";
  const std::string scope = s.cppName + "::View";
  for (const auto& f : s.fields) {
    if (!f.isVoid) out += viewDefaultDecl(f);
  }
  if (!members.empty()) out += "  using Which = " + s.cppName + "::Which;\n";
  for (const auto& f : s.fields) {
    if (f.discriminant >= 0) continue;
    out += "  " + viewType(f.type) + " " + f.member + viewInitializer(f, scope, source) + ";\n";
  }
  if (!members.empty()) {
    out += "\n  Which which() const noexcept { return which_; }\n";
    for (const Field* f : members) {
      const std::string P = pascal(f->schemaName);
      out += "  bool is" + P + "() const noexcept { return which_ == Which::k" + P + "; }\n";
      if (f->isVoid) {
        out += "  void set" + P + "() noexcept { which_ = Which::k" + P + "; }\n";
        continue;
      }
      const std::string T = viewType(f->type);
      out += "  const " + T + "& get" + P + "() const noexcept { return " + f->member + "; }\n";
      out += "  void set" + P + "(" + T + " value) noexcept {\n";
      out += "    which_ = Which::k" + P + ";\n";
      out += "    " + f->member + " = value;\n";
      out += "  }\n";
    }
    out += "  Which which_ = Which::k" + pascal(members.front()->schemaName) + ";\n";
    for (const Field* f : members) {
      if (!f->isVoid) out += "  " + viewType(f->type) + " " + f->member + viewInitializer(*f, scope, source) + ";\n";
    }
  }
  out += "};\n\n";
}

}  // namespace

void emitViews(const std::vector<const StructDecl*>& all, const std::string& cppNamespace, std::string& out,
               std::string& source) {
  std::map<std::string, const StructDecl*> byName;
  for (const StructDecl* s : all) {
    if (s->refused.empty() && s->coded && s->templateParams.empty()) byName[s->cppName] = s;
  }
  // A view holds the views of its by-value coded fields: those are defined first.
  std::set<std::string> done;
  std::function<void(const StructDecl&)> define = [&](const StructDecl& s) {
    if (!done.insert(s.cppName).second) return;
    for (const auto& f : s.fields) {
      if (!holdsCodedByValue(f.type)) continue;
      auto it = byName.find(f.type.cppName);
      if (it != byName.end()) define(*it->second);
    }
    const std::string prefix = cppNamespace.empty() ? "::" : "::" + cppNamespace + "::";
    std::string rel = s.cppName;
    if (rel.compare(0, prefix.size(), prefix) == 0) rel.erase(0, prefix.size());
    emitView(s, rel, out, source);
  };
  for (const StructDecl* s : all) {
    if (byName.count(s->cppName) != 0) define(*s);
  }
}

void emitEnum(const EnumDecl& e, int in, std::string& out) {
  out += docLines(e.doc, in);
  out += ind(in) + "enum class " + e.name + " : uint16_t {\n";
  for (size_t i = 0; i < e.enumerants.size(); ++i) {
    out += docLines(e.enumerants[i].second, in + 2);
    out += ind(in + 2) + e.enumerants[i].first + " = " + std::to_string(i) + ",\n";
  }
  out += ind(in) + "};\n";
}

std::string reasonLines(const std::vector<std::string>& reasons, int in) {
  std::string out;
  for (const auto& r : reasons) out += ind(in) + "//   " + r + "\n";
  return out;
}

// The class template a generic struct is: `template <class T, class U> struct Pair;`.
std::string templateDecl(const StructDecl& s) {
  std::string params;
  for (const auto& p : s.templateParams) params += (params.empty() ? "class " : ", class ") + p;
  return "template <" + params + "> struct " + s.name + ";\n";
}

void emitForwards(const std::vector<StructDecl>& structs, int in, std::string& out) {
  if (std::none_of(structs.begin(), structs.end(), [](const StructDecl& s) { return s.coded; })) return;
  for (const auto& s : structs) {
    if (!s.templateParams.empty()) out += ind(in) + templateDecl(s);
  }
  for (const auto& s : structs) {
    if (!s.templateParams.empty()) continue;
    out += ind(in) + (s.templateArgs.empty() ? "" : "template <> ") + "struct " + s.name + s.templateArgs + ";\n";
  }
}

namespace {
// Whether `n` (or a struct nested in it) holds a value of struct `id` as a member.
bool holds(const StructDecl& n, uint64_t id) {
  for (const auto& f : n.fields) {
    if (f.type.id == id) return true;  // an id names one declaration, of whatever kind
  }
  return std::any_of(n.nestedStructs.begin(), n.nestedStructs.end(), [&](const StructDecl& m) { return holds(m, id); });
}
}  // namespace

void emitStruct(const StructDecl& s, int in, std::string& out, const std::string& scope, std::string* after,
                const std::string& head) {
  if (!s.templateParams.empty()) {
    out += docLines(s.doc, in);
    out += ind(in) + "// Generic: each use with concrete types below is a specialization.\n";
    out += ind(in) + templateDecl(s);
    return;
  }
  const std::string name = (head.empty() ? s.name : head) + s.templateArgs;
  // A nested struct that holds its parent by value (capnp's json.capnp: Value.Field holds a
  // Value) cannot be defined inside it: it is declared there and defined after it.
  auto nestedStructs = [&](int nin) {
    for (const auto& n : s.nestedStructs) {
      if (after != nullptr && holds(n, s.id)) {
        std::string def;
        emitStruct(n, 0, def, scope + "::" + n.name, after, scope + "::" + n.name);
        *after += def;
        continue;
      }
      emitStruct(n, nin, out, scope + "::" + n.name, after);
    }
  };
  if (!s.refused.empty()) {
    // No method uses it (else generation would have failed): leave it out, keep its nested types.
    out += ind(in) + "// struct " + s.name + " is not generated, it uses what lrpc does not support:\n";
    out += reasonLines({s.refused}, in);
    if (s.nestedEnums.empty() && s.nestedStructs.empty() && s.nestedInterfaces.empty()) return;
    out += ind(in) + "struct " + name + " {  // only its nested types\n";
    out += ind(in + 2) + s.name + "() = delete;\n";
    for (const auto& e : s.nestedEnums) emitEnum(e, in + 2, out);
    emitForwards(s.nestedStructs, in + 2, out);
    nestedStructs(in + 2);
    emitNestedInterfaces(s.nestedInterfaces, in + 2, out);
    out += ind(in) + "};\n";
    return;
  }
  out += docLines(s.doc, in);
  if (!s.templateArgs.empty()) out += ind(in) + "template <>\n";
  out += ind(in) + "struct " + name + " {\n";
  for (const auto& e : s.nestedEnums) emitEnum(e, in + 2, out);
  emitForwards(s.nestedStructs, in + 2, out);
  nestedStructs(in + 2);
  emitNestedInterfaces(s.nestedInterfaces, in + 2, out);
  if (s.coded) {
    out += ind(in + 2) + "// The same value as views (std::string_view, std::span), defined after every struct.\n";
    out += ind(in + 2) + "struct View;\n";
    emitCodedMembers(s, in + 2, out);
  } else {
    for (const auto& f : s.fields) {
      out += docLines(f.doc, in + 2);
      out += ind(in + 2) + memberType(f.type) + " " + f.name +
             (f.defaultValue.empty() ? std::string() : " = " + f.defaultValue) + ";\n";
    }
  }
  out += "\n" + ind(in + 2) + "bool operator==(const " + s.name + "&) const = default;\n";
  out += ind(in) + "};\n";
}

void emitLayoutAsserts(const std::string& cppName, uint32_t size, uint32_t align, const std::vector<Field>& fields,
                       std::string& out) {
  out += "static_assert(std::is_trivially_copyable_v<" + cppName + ">);\n";
  out += "static_assert(sizeof(" + cppName + ") == " + std::to_string(size) + " && alignof(" + cppName +
         ") == " + std::to_string(align) + ");\n";
  for (const auto& f : fields) {
    out += "static_assert(offsetof(" + cppName + ", " + f.name + ") == " + std::to_string(f.offset) + ");\n";
  }
}

void emitStructAsserts(const StructDecl& s, std::string& out) {
  for (const auto& n : s.nestedStructs) emitStructAsserts(n, out);
  if (!s.refused.empty() || s.coded || !s.templateParams.empty()) return;
  emitLayoutAsserts(s.cppName, s.size, s.align, s.fields, out);
}

void emitCodecFunctions(const std::vector<const StructDecl*>& all, std::string& out, std::string& source) {
  std::string decls, unions, defs;
  for (const StructDecl* s : all) {
    if (!s->refused.empty()) continue;
    const std::string S = s->cppName;
    if (s->coded) {
      decls += "inline uint32_t lrpcHead(const " + S + "&) noexcept { return " + std::to_string(s->size) + "; }\n";
      decls += "uint64_t lrpcSize(const " + S + "& v_, uint32_t depth_) noexcept;\n";
      decls += "uint64_t lrpcPut(std::byte* t_, uint64_t at_, const " + S + "& v_, ::lrpc::codec::CapCodec*) noexcept;\n";
      decls += "bool lrpcGet(::lrpc::codec::Reader& r_, ::lrpc::VarRef ref_, " + S + "& out_);\n";
      emitCodedDefinitions(*s, false, unions, defs);
      const std::string V = S + "::View";
      decls += "inline uint32_t lrpcHead(const " + V + "&) noexcept { return " + std::to_string(s->size) + "; }\n";
      decls += "uint64_t lrpcSize(const " + V + "& v_, uint32_t depth_) noexcept;\n";
      decls += "uint64_t lrpcPut(std::byte* t_, uint64_t at_, const " + V + "& v_, ::lrpc::codec::CapCodec*) noexcept;\n";
      decls += "bool lrpcGet(::lrpc::codec::Reader& r_, ::lrpc::VarRef ref_, " + V + "& out_);\n";
      decls += "" + V + " lrpcViewOf(const " + S + "& v_, ::lrpc::ViewArena& a_);\n";
      decls += "" + S + " lrpcOwnedOf(const " + V + "& v_);\n";
      emitCodedDefinitions(*s, true, unions, defs);
      emitConversions(*s, defs);
      continue;
    }
    if (!s->padding.empty()) {
      decls += "inline void lrpcScrub(" + S + "& v_) noexcept {\n";
      decls += "  std::byte* p_ = reinterpret_cast<std::byte*>(&v_);\n";
      emitZeroPadding("p_", s->padding, "  ", decls);
      decls += "}\n";
    }
    if (!s->boolOffsets.empty()) {
      decls += "inline void lrpcFixBools(" + S + "& v_) noexcept {\n";
      emitBoolFix("v_", s->boolOffsets, 2, decls);
      decls += "}\n";
    }
  }
  if (decls.empty()) return;
  out += "// How these structs travel inside a frame's tail (runtime/codec.h; defined in the source file).\n";
  out += decls + "\n" + unions;
  source += defs;
}

}  // namespace lrpc::stubgen
