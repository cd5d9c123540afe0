// S::View for each coded struct (runtime/codec_view.h): the same members as views
// (std::string_view, std::span, E::View), with the schema's defaults where a view can hold them.
#include <functional>
#include <map>
#include <set>

#include "stubgen/emit_struct.h"
#include "stubgen/names.h"
#include "stubgen/type_rules.h"

namespace lrpc::stubgen {
namespace {

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

}  // namespace lrpc::stubgen
