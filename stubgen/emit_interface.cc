// An interface's struct in generated code: its frames (the Args/Results structs), PDL and
// descriptor, and the C++ signatures its methods have in the Client and the Server.
#include "stubgen/emit_parts.h"

#include <algorithm>
#include <set>

#include "stubgen/cpp_text.h"
#include "stubgen/emit_struct.h"
#include "stubgen/names.h"
#include "stubgen/type_rules.h"

namespace lrpc::stubgen {

// `withDefaults`: the client's public methods, where the schema's defaults of the trailing
// parameters become C++ default arguments (C++ allows them only there).
std::string paramList(const Method& m, bool withDefaults) {
  size_t firstDefault = m.params.size();
  while (withDefaults && firstDefault > 0 && !m.params[firstDefault - 1].defaultValue.empty()) --firstDefault;
  std::string s;
  for (size_t i = 0; i < m.params.size(); ++i) {
    s += (i ? ", " : "") + (m.views ? viewParamType(m.params[i].type) : paramType(m.params[i].type)) + " " +
         m.params[i].name;
    if (i >= firstDefault) s += " = " + m.params[i].defaultValue;
  }
  return s;
}

std::string argNames(const Method& m) {
  std::string s;
  for (const auto& p : m.params) s += ", " + p.name;
  return s;
}

std::string returnType(const Method& m) {
  if (m.results.empty()) return "::lrpc::Status";
  if (m.results.size() == 1) return "::lrpc::Result<" + valueType(m.results[0].type) + ">";
  return "::lrpc::Result<" + m.frameScope + "::" + m.framePrefix + "Results>";
}

// What a $Lrpc.deferred handler's Reply carries: the value its Result would hold.
std::string replyValue(const Method& m) {
  if (m.results.empty()) return "void";
  if (m.results.size() == 1) return valueType(m.results[0].type);
  return m.frameScope + "::" + m.framePrefix + "Results";
}
std::string replyType(const Method& m) { return "::lrpc::Reply<" + replyValue(m) + ">"; }

// A handler's declaration after its name: "(params) -> Result" or, deferred, "(params, Reply&&)".
std::string handlerSignature(const Method& m) {
  if (!m.deferred) return returnType(m) + " " + m.name + "(" + paramList(m) + ")";
  const std::string params = paramList(m);
  return "void " + m.name + "(" + params + (params.empty() ? "" : ", ") + replyType(m) + "&& reply)";
}

bool holdsCapability(const Method& m) {
  return m.results.size() > 1 && std::any_of(m.results.begin(), m.results.end(),
                                             [](const Field& f) { return isCapability(f.type); });
}

// `complete`: the interfaces whose Client class is defined above this point.
void emitResultsStruct(const Method& m, const std::string& name, int in, const std::set<std::string>& complete,
                       std::string& out) {
  const std::string I = ind(in);
  out += I + "struct " + name + " {\n";
  for (const auto& f : m.results) {
    out += docLines(f.doc, in + 2);
    // A capability of an interface whose Client is not complete yet (the interface itself, or
    // one emitted later: its nested interfaces are emitted first) is held as a Cap, which converts.
    const bool later = isCapability(f.type) && !complete.count(f.type.cppName);
    out += I + "  " + (later ? memberType(f.type) : valueType(f.type)) + " " + f.name + ";\n";
  }
  out += I + "};\n";
}

namespace {

void emitFrames(const Method& m, std::string& out) {
  out += "  // " + m.schemaName + " @" + std::to_string(m.ordinal) + ": frames\n";
  auto frame = [&](const std::vector<Field>& fields, const std::string& name) {
    if (fields.empty()) return;
    out += "  struct " + name + " {\n";
    for (const auto& f : fields) out += "    " + frameType(f.type) + " " + f.name + ";\n";
    out += "  };\n";
  };
  frame(m.params, m.framePrefix + "ArgsFrame");
  frame(m.results, m.framePrefix + "ResultsFrame");
  if (m.results.size() > 1) {
    out += "  // What " + m.schemaName + " returns.\n";
    if (holdsCapability(m)) {
      // It holds a Client, complete only further down: defined before this interface's Client.
      out += "  struct " + m.framePrefix + "Results;\n";
      return;
    }
    emitResultsStruct(m, m.framePrefix + "Results", 2, {}, out);  // no capability: nothing waits for a Client
  }
}

}  // namespace

std::string indented(const std::string& text, int in) {
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    if (end > pos) out += ind(in);
    out += text.substr(pos, end - pos) + "\n";
    pos = end + 1;
  }
  return out;
}

void emitNestedInterfaces(const std::vector<InterfaceDecl>& interfaces, int in, std::string& out) {
  for (const auto& n : interfaces) {
    std::string text;
    emitInterfaceStruct(n, text);
    out += indented(text, in);
  }
}

namespace {

// Nested interfaces first by name: a nested struct may hold a capability of one (Cap<Outer::Inner>).
void forwardNestedInterfaces(const InterfaceDecl& d, std::string& out) {
  bool any = false;
  for (const auto& n : d.nestedInterfaces) {
    if (!n.refusals.empty()) continue;
    out += "  struct " + n.name + ";\n";
    any = true;
  }
  if (any) out += "\n";
}

// The types declared inside an interface's struct: its enums, forward declarations, structs
// (what of them goes after the interface's struct is added to `after`) and interfaces.
void emitNestedTypes(const InterfaceDecl& d, std::string& out, std::string& after) {
  for (const auto& e : d.nestedEnums) emitEnum(e, 2, out);
  forwardNestedInterfaces(d, out);
  emitForwards(d.nestedStructs, 2, out);
  for (const auto& s : d.nestedStructs) emitStruct(s, 2, out, d.relName + "::" + s.name, &after);
  emitNestedInterfaces(d.nestedInterfaces, 2, out);
}

// An interface left out by LRPC_SKIP_UNSUPPORTED: a comment saying why, and its nested types
// (other declarations may use them).
void emitLeftOutInterface(const InterfaceDecl& d, std::string& out) {
  std::vector<std::string> reasons;
  for (const auto& r : d.refusals) reasons.push_back(r.str());
  out += "// interface " + d.name + " is not generated (LRPC_SKIP_UNSUPPORTED), it uses what lrpc does not support:\n";
  out += reasonLines(reasons, 0);
  if (d.nestedEnums.empty() && d.nestedStructs.empty() && d.nestedInterfaces.empty()) return;
  out += "struct " + d.name + " {  // only its nested types\n";
  out += "  " + d.name + "() = delete;\n";
  std::string after;
  emitNestedTypes(d, out, after);
  out += "};\n";
  out += after;
  for (const auto& n : d.nestedStructs) emitStructAsserts(n, out);
}

}  // namespace

void emitInterfaceStruct(const InterfaceDecl& d, std::string& out) {
  if (!d.refusals.empty()) {
    emitLeftOutInterface(d, out);
    return;
  }
  out += docLines(d.doc, 0);
  out += "struct " + d.name + " {\n";
  out += "  " + d.name + "() = delete;\n\n";
  std::string after;
  emitNestedTypes(d, out, after);
  if (!d.nestedEnums.empty() || !d.nestedStructs.empty()) out += "\n";
  for (size_t i = d.ownBegin; i < d.methods.size(); ++i) emitFrames(d.methods[i], out);
  out += "\n  // PDL indexes, the `procedure` of a call.\n";
  for (const auto& m : d.methods) {
    out += "  static constexpr uint32_t " + m.constName + " = " + std::to_string(m.index) + ";\n";
  }
  if (d.carriesCaps) {
    out += "  // Calls on capabilities received through a binding of " + d.name + " (runtime/capability.h).\n";
    out += "  static constexpr uint32_t kLrpcCapCall = " + std::to_string(d.methods.size()) + ";\n";
  }
  out += "  static constexpr uint32_t kProcedureCount = " + std::to_string(d.methods.size() + (d.carriesCaps ? 1 : 0)) +
         ";\n";
  if (d.methods.empty()) {
    out += "  static constexpr const ::lrpc::ProcedureDescriptor* kProcedures = nullptr;\n";
  } else {
    out += "  // index, ordinal, name, argsSize, resultsSize, align, astackCount, astackBytes, variable\n";
    out += "  static constexpr ::lrpc::ProcedureDescriptor kProcedures[] = {\n";
    for (const auto& m : d.methods) {
      out += "      {" + std::to_string(m.index) + ", " + std::to_string(m.ordinal) + ", " + quoted(m.schemaName) +
             ", " + std::to_string(m.argsSize) + ", " + std::to_string(m.resultsSize) + ", " +
             std::to_string(std::max(m.argsAlign, m.resultsAlign)) + ", " + std::to_string(m.astackCount) + ", " +
             std::to_string(m.astackBytes) + ", " + (m.variable ? "true" : "false") + "},\n";
    }
    if (d.carriesCaps) out += "      ::lrpc::detail::capCallProcedure(kLrpcCapCall),\n";
    out += "  };\n";
  }
  if (!d.prefixBases.empty()) {
    out += "  // The interfaces it extends whose PDL opens this one's (its first-base chain).\n";
    out += "  static constexpr uint64_t kPrefixBases[] = {";
    for (size_t i = 0; i < d.prefixBases.size(); ++i) out += (i ? ", " : "") + hex64(d.prefixBases[i].first);
    out += "};\n";
  }
  out += "  static const ::lrpc::InterfaceDescriptor kDescriptor;\n\n";
  out += "  class Client;\n";
  out += "  class Server;\n";
  out += "};\n";
  out += after;
  for (const auto& s : d.nestedStructs) emitStructAsserts(s, out);
  for (size_t i = d.ownBegin; i < d.methods.size(); ++i) {
    const Method& m = d.methods[i];
    if (!m.params.empty()) {
      emitLayoutAsserts(m.frameScope + "::" + m.framePrefix + "ArgsFrame", m.argsSize, m.argsAlign, m.params, out);
    }
    if (!m.results.empty()) {
      emitLayoutAsserts(m.frameScope + "::" + m.framePrefix + "ResultsFrame", m.resultsSize, m.resultsAlign,
                        m.results, out);
    }
  }
  out += "\n";
}

}  // namespace lrpc::stubgen
