// A schema's structs and enums as C++ declarations: flattened structs, coded ones with their
// owning members and union accessors, generic ones as class templates, and the layout checks.
// Their View is written by emit_view.cc, their codec functions by emit_codec.cc.
#include "stubgen/emit_struct.h"

#include <algorithm>

#include "stubgen/cpp_text.h"
#include "stubgen/names.h"
#include "stubgen/type_rules.h"

namespace lrpc::stubgen {

std::vector<const Field*> unionMembers(const StructDecl& s) {
  std::vector<const Field*> out;
  for (const auto& f : s.fields) {
    if (f.discriminant >= 0) out.push_back(&f);
  }
  std::sort(out.begin(), out.end(), [](const Field* a, const Field* b) { return a->discriminant < b->discriminant; });
  return out;
}

namespace {

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


}  // namespace

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
  // Two appends, not "\n" + ind(...): g++ 12 at -O3 warns a false -Wrestrict on the latter.
  out += "\n";
  out += ind(in + 2) + "bool operator==(const " + s.name + "&) const = default;\n";
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

}  // namespace lrpc::stubgen
