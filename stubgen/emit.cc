#include "stubgen/emit.h"

#include <algorithm>
#include <functional>
#include <set>

#include "stubgen/cpp_text.h"
#include "stubgen/emit_struct.h"
#include "stubgen/names.h"

namespace lrpc::stubgen {
namespace {

// ---- Declarations -------------------------------------------------------------------------

// `withDefaults`: the client's public methods, where the schema's defaults of the trailing
// parameters become C++ default arguments (C++ allows them only there).
std::string paramList(const Method& m, bool withDefaults = false) {
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
                                             [](const Field& f) { return f.type.kind == Kind::kInterface; });
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
    const bool later = f.type.kind == Kind::kInterface && !complete.count(f.type.cppName);
    out += I + "  " + (later ? memberType(f.type) : valueType(f.type)) + " " + f.name + ";\n";
  }
  out += I + "};\n";
}

// A method that returns one capability of an interface whose Client is defined further down (a
// nested interface returning its enclosing one): Result<ThatClient> cannot be instantiated
// inside the class, so the method is only declared there and defined after every class.
bool returnsLaterClient(const InterfaceDecl& d, const Method& m, const std::set<std::string>& complete) {
  return m.results.size() == 1 && m.results[0].type.kind == Kind::kInterface &&
         m.results[0].type.cppName != d.cppName && !complete.count(m.results[0].type.cppName);
}

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
  for (const auto& e : d.nestedEnums) emitEnum(e, 2, out);
  forwardNestedInterfaces(d, out);
  emitForwards(d.nestedStructs, 2, out);
  std::string after;
  for (const auto& n : d.nestedStructs) emitStruct(n, 2, out, d.relName + "::" + n.name, &after);
  emitNestedInterfaces(d.nestedInterfaces, 2, out);
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
  for (const auto& e : d.nestedEnums) emitEnum(e, 2, out);
  forwardNestedInterfaces(d, out);
  emitForwards(d.nestedStructs, 2, out);
  std::string after;
  for (const auto& s : d.nestedStructs) emitStruct(s, 2, out, d.relName + "::" + s.name, &after);
  emitNestedInterfaces(d.nestedInterfaces, 2, out);
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

namespace {

// ---- Straight-line copy code, shared by the client (arguments) and the server (results) ----

struct WriteSpec {
  std::string what;         // "Calc.add: argument" / "Calc.add: result"
  std::string tooBigCode;   // ::lrpc::Errc::kInvalidArgument / kServerFault
  std::string fixedBase;    // expression: std::byte* of the fixed part
  std::string reserveTail;  // "call_.argTail" / "call_.resultTail"
  bool fixedFirst;          // client: args() before argTail(); server: tail first
  std::string copyTail;     // copies one value into the tail: "call_.copyTail" (may stream) / "std::memcpy"
  bool moveTail = false;    // results: "call_.moveResultTail(dst, value)", which may take the value over
  std::string depth = "::lrpc::codec::kMaxDepth";  // levels a nested value may take (the reader's limit)
  // The id of a capability: this, then the Client's binding and ")" (runtime/capability.h).
  std::string capId;
};

std::string elemSize(const Type& list) { return "sizeof(" + frameType(elemOf(list)) + ")"; }

// The Reader's nesting limit: $Lrpc.maxDepth, else the codec's default.
std::string depthArg(const Method& m) {
  return ", " + (m.maxDepth == 0 ? std::string("::lrpc::codec::kMaxDepth") : std::to_string(m.maxDepth) + "u") +
         ", &caps_";
}

bool anyCoded(const std::vector<Field>& fields) {
  return std::any_of(fields.begin(), fields.end(), [](const Field& f) { return f.type.coded; });
}

bool anyInterface(const std::vector<Field>& fields) {
  return std::any_of(fields.begin(), fields.end(), [](const Field& f) { return f.type.kind == Kind::kInterface; });
}

// Writes `fields`, whose values are `valueOf(field)`, into a frame: fixed values by memcpy at
// their constant offsets, variable ones into one tail reservation at 8-byte aligned offsets.
void emitWrite(const std::vector<Field>& fields, uint32_t frameSize,
               const std::function<std::string(const Field&)>& valueOf, const WriteSpec& spec, int in,
               std::string& out) {
  const std::string I = ind(in);
  bool anyVar = false;
  std::string prevEnd = "0";
  for (const auto& f : fields) {
    if (!isVariable(f.type)) continue;
    anyVar = true;
    const std::string v = valueOf(f);
    const std::string bytes = f.name + "Bytes_";
    Type e = elemOf(f.type);
    if (f.type.coded) {
      // A struct or list with values inside it: runtime/codec.h lays it out.
      out += I + "const uint64_t " + bytes + " = ::lrpc::codec::size(" + v + ", " + spec.depth + ");\n";
      out += I + "if (" + bytes + " == ::lrpc::codec::kTooDeep) {\n";
      out += I + "  return ::lrpc::Status(" + spec.tooBigCode + ", " +
             quoted(spec.what + " " + f.schemaName + " nests deeper than its limit of ") + " + std::to_string(" +
             spec.depth + ") + \" levels ($Lrpc.maxDepth)\");\n";
      out += I + "}\n";
    } else if (f.type.kind == Kind::kList && isVariable(e)) {
      // The VarRef names the element array; the elements' bytes follow it.
      out += I + "const uint64_t " + f.name + "Len_ = uint64_t{sizeof(::lrpc::VarRef)} * " + v + ".size();\n";
      out += I + "uint64_t " + bytes + " = " + f.name + "Len_;\n";
      out += I + "for (const auto& e_ : " + v + ") " + bytes + " += e_.size();\n";
    } else if (f.type.kind == Kind::kList) {
      out += I + "const uint64_t " + bytes + " = uint64_t{" + elemSize(f.type) + "} * " + v + ".size();\n";
    } else {
      out += I + "const uint64_t " + bytes + " = " + v + ".size();\n";
    }
    if (f.maxBytes != 0) {
      out += I + "if (" + bytes + " > " + std::to_string(f.maxBytes) + ") {\n";
      out += I + "  return ::lrpc::Status(" + spec.tooBigCode + ", " + quoted(spec.what + " " + f.schemaName + " is ") +
             " + std::to_string(" + bytes + ") + " + quoted(" bytes, over its $Lrpc.maxBytes(" +
                                                            std::to_string(f.maxBytes) + ")") + ");\n";
      out += I + "}\n";
    }
    out += I + "const uint64_t " + f.name + "At_ = ::lrpc::detail::alignTail(" + prevEnd + ");\n";
    prevEnd = f.name + "At_ + " + bytes;
  }
  if (anyVar) {
    out += I + "const uint64_t tailBytes_ = " + prevEnd + ";\n";
    out += I + "if (tailBytes_ > UINT32_MAX) {\n";
    out += I + "  return ::lrpc::Status(" + spec.tooBigCode + ", " + quoted(spec.what + "s total more than 4 GiB") + ");\n";
    out += I + "}\n";
  }
  auto fixedPart = [&] {
    if (fields.empty()) return;
    out += I + "std::byte* fixed_ = " + spec.fixedBase + ";\n";
    for (const auto& f : fields) {
      const std::string v = valueOf(f);
      const std::string off = std::to_string(f.offset);
      if (f.type.kind == Kind::kBool) {
        out += I + "const uint8_t " + f.name + "Byte_ = " + v + " ? 1 : 0;\n";
        out += I + "std::memcpy(fixed_ + " + off + ", &" + f.name + "Byte_, 1);\n";
      } else if (isVariable(f.type)) {
        const bool listOfVar = f.type.kind == Kind::kList && !f.type.coded && isVariable(elemOf(f.type));
        const std::string length = f.type.coded ? "::lrpc::codec::head(" + v + ")"
                                   : listOfVar  ? f.name + "Len_"
                                                : f.name + "Bytes_";
        out += I + "const ::lrpc::VarRef " + f.name + "Ref_{static_cast<uint32_t>(" + f.name +
               "At_), static_cast<uint32_t>(" + length + ")};\n";
        out += I + "std::memcpy(fixed_ + " + off + ", &" + f.name + "Ref_, sizeof " + f.name + "Ref_);\n";
      } else if (f.type.kind == Kind::kInterface) {
        out += I + "const ::lrpc::Result<uint32_t> " + f.name + "Cap_ = " + spec.capId + v + ".binding());\n";
        out += I + "if (!" + f.name + "Cap_.isOk()) return " + f.name + "Cap_.status();\n";
        out += I + "std::memcpy(fixed_ + " + off + ", &*" + f.name + "Cap_, sizeof(uint32_t));\n";
      } else {
        out += I + "std::memcpy(fixed_ + " + off + ", &" + v + ", sizeof " + v + ");\n";
        // The caller's struct padding holds whatever its memory held before.
        if (f.type.kind == Kind::kStruct) emitZeroPadding("fixed_ + " + off, f.type.padding, I, out);
      }
    }
    // The frame's own gaps: a reused A-stack or buffer holds earlier calls' bytes there.
    uint32_t end = 0;
    for (const auto& f : fields) {
      if (f.offset > end) emitZeroPadding("fixed_", {{end, f.offset - end}}, I, out);
      end = f.offset + f.size;
    }
    if (frameSize > end) emitZeroPadding("fixed_", {{end, frameSize - end}}, I, out);
  };
  auto tailPart = [&] {
    if (!anyVar) return;
    out += I + "auto reserved_ = " + spec.reserveTail + "(static_cast<size_t>(tailBytes_));\n";
    out += I + "if (!reserved_.isOk()) return reserved_.status();\n";
    out += I + "std::byte* t_ = reserved_->data();\n";
    std::string end;  // where the previous value ends; empty before the first
    for (const auto& f : fields) {
      if (!isVariable(f.type)) continue;
      const std::string v = valueOf(f);
      const std::string at = f.name + "At_";
      Type e = elemOf(f.type);
      // A reserved tail is not zeroed (a large one would be written twice): the alignment
      // gap before each value is, so no stale byte of a reused buffer goes out.
      if (!end.empty()) {
        out += I + "if (" + at + " != " + end + ") std::memset(t_ + " + end + ", 0, " + at + " - (" + end + "));\n";
      }
      end = at + " + " + f.name + "Bytes_";
      if (f.type.coded) {
        out += I + "::lrpc::codec::put(t_, " + at + ", " + v + ", &caps_);\n";
        out += I + "if (!caps_.error.isOk()) return caps_.error;  // a capability inside it\n";
      } else if (f.type.kind == Kind::kList && isVariable(e)) {
        out += I + "{\n";
        out += I + "  uint64_t at_ = " + at + " + uint64_t{sizeof(::lrpc::VarRef)} * " + v + ".size();\n";
        out += I + "  for (size_t i_ = 0; i_ < " + v + ".size(); ++i_) {\n";
        out += I + "    const auto& e_ = " + v + "[i_];\n";
        out += I + "    const ::lrpc::VarRef ref_{static_cast<uint32_t>(at_), static_cast<uint32_t>(e_.size())};\n";
        out += I + "    std::memcpy(t_ + " + at + " + i_ * sizeof ref_, &ref_, sizeof ref_);\n";
        out += I + "    if (!e_.empty()) std::memcpy(t_ + at_, e_.data(), e_.size());\n";
        out += I + "    at_ += e_.size();\n";
        out += I + "  }\n";
        out += I + "}\n";
      } else if (f.type.kind == Kind::kList && e.kind == Kind::kBool) {
        out += I + "for (size_t i_ = 0; i_ < " + v + ".size(); ++i_) {\n";
        out += I + "  t_[" + at + " + i_] = std::byte{static_cast<uint8_t>(" + v + "[i_] ? 1 : 0)};\n";
        out += I + "}\n";
      } else if (e.kind == Kind::kStruct && !e.padding.empty() && spec.moveTail) {
        // The handler's own values: their padding is zeroed in place before they go.
        out += I + "for (auto& e_ : " + v + ") {\n";
        out += I + "  std::byte* p_ = reinterpret_cast<std::byte*>(&e_);\n";
        emitZeroPadding("p_", e.padding, I + "  ", out);
        out += I + "}\n";
        out += I + "if (" + f.name + "Bytes_ != 0) call_.moveResultTail(t_ + " + at + ", " + v + ");\n";
      } else if (e.kind == Kind::kStruct && !e.padding.empty()) {
        // The caller's values are const: each goes through a copy whose padding is zeroed.
        out += I + "for (size_t i_ = 0; i_ < " + v + ".size(); ++i_) {\n";
        out += I + "  " + e.cppName + " e_ = " + v + "[i_];\n";
        out += I + "  std::byte* p_ = reinterpret_cast<std::byte*>(&e_);\n";
        emitZeroPadding("p_", e.padding, I + "  ", out);
        out += I + "  " + spec.copyTail + "(t_ + " + at + " + i_ * sizeof e_, p_, sizeof e_);\n";
        out += I + "}\n";
      } else if (spec.moveTail) {
        out += I + "if (" + f.name + "Bytes_ != 0) call_.moveResultTail(t_ + " + at + ", " + v + ");\n";
      } else {
        out += I + "if (" + f.name + "Bytes_ != 0) " + spec.copyTail + "(t_ + " + at + ", " + v + ".data(), " +
               f.name + "Bytes_);\n";
      }
    }
  };
  if (spec.fixedFirst) {
    fixedPart();
    tailPart();
  } else {
    tailPart();
    fixedPart();
  }
}

std::vector<uint32_t> frameBoolOffsets(const std::vector<Field>& fields) {
  std::vector<uint32_t> out;
  for (const auto& f : fields) {
    if (f.type.kind != Kind::kStruct) continue;
    for (uint32_t o : f.type.boolOffsets) out.push_back(f.offset + o);
  }
  return out;
}

// Reads the variable value named by `ref` (a VarRef already copied out of the frame) from
// `tail_` into `target`, after checking it lies inside the tail (and under maxBytes).
// `streamed`: the server reading arguments, which may still be arriving (awaitArgTail).
// `view` (server, Data only): a span set to the bytes, in place when the tail is private.
void emitReadVar(const Field& f, const std::string& ref, const std::string& target, const std::string& what,
                 int in, bool streamed, std::string& out, const std::string& view = "") {
  const std::string I = ind(in);
  const std::string bad = "return ::lrpc::Status(::lrpc::Errc::kBadFrame, " +
                          quoted(what + " " + f.schemaName + " lies outside the tail, is misaligned or is over "
                                 "its size limit") + ");";
  if (f.type.coded) {
    // Everything inside it is checked and copied by runtime/codec.h, against one budget (rd_)
    // for the whole tail and a nesting limit.
    if (streamed) out += I + "if (::lrpc::Status s_ = call_.awaitArgTail(tail_.size()); !s_.isOk()) return s_;\n";
    if (f.maxBytes) out += I + "const uint64_t " + f.name + "Budget_ = rd_.budget;\n";
    out += I + "if (!::lrpc::codec::get(rd_, " + ref + ", " + target + ")" +
           (f.maxBytes ? " || " + f.name + "Budget_ - rd_.budget > " + std::to_string(f.maxBytes) : std::string()) +
           ") {\n";
    out += I + "  if (!caps_.error.isOk()) return caps_.error;  // a capability id inside it\n";
    out += I + "  return ::lrpc::Status(::lrpc::Errc::kBadFrame, " +
           quoted(what + " " + f.schemaName + " is malformed: a value lies outside the tail, is misaligned, nests "
                  "too deep, names bytes twice or is over its size limit") + ");\n";
    out += I + "}\n";
    return;
  }
  Type e = elemOf(f.type);
  const bool listOfVar = f.type.kind == Kind::kList && isVariable(e);
  const std::string size = f.type.kind == Kind::kList ? elemSize(f.type) : "1";
  out += I + "if (!::lrpc::detail::varRefOk(" + ref + ", tail_.size(), " + size + ")" +
         (f.maxBytes && !listOfVar ? " || " + ref + ".length > " + std::to_string(f.maxBytes) : std::string()) + ") {\n";
  out += I + "  " + bad + "\n";
  out += I + "}\n";
  const std::string src = "tail_.data() + " + ref + ".offset";
  if (streamed && f.inPlace) {
    // $Lrpc.inPlace: no copy "E"; the handler reads the bytes where they are, once all are there.
    out += I + "if (::lrpc::Status s_ = call_.awaitArgTail(size_t{" + ref + ".offset} + " + ref + ".length); !s_.isOk()) return s_;\n";
    out += I + view + " = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(" + src + "), " + ref + ".length);\n";
    return;
  }
  if (streamed && f.type.kind == Kind::kData) {
    // A tail no one else can write (the network path's request buffer) needs no copy "E".
    out += I + "if (call_.argTailPrivate()) {\n";
    out += I + "  " + view + " = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(" + src + "), " + ref +
           ".length);\n";
    out += I + "} else {\n";
    out += I + "  if (::lrpc::Status s_ = ::lrpc::detail::copyArgBytes(call_, tail_, " + ref + ", " + target +
           "); !s_.isOk()) return s_;\n";
    out += I + "  " + view + " = std::span<const uint8_t>(" + target + ");\n";
    out += I + "}\n";
    return;
  }
  if (streamed) {
    // A list of variable values reaches past its VarRef array: wait for the whole tail.
    const std::string end = listOfVar ? std::string("tail_.size()") : "size_t{" + ref + ".offset} + " + ref + ".length";
    out += I + "if (::lrpc::Status s_ = call_.awaitArgTail(" + end + "); !s_.isOk()) return s_;\n";
  }
  if (f.type.kind == Kind::kText) {
    out += I + target + ".assign(reinterpret_cast<const char*>(" + src + "), " + ref + ".length);\n";
  } else if (f.type.kind == Kind::kData) {
    // Only the client's results get here (a server's Data arguments returned above): the
    // Call copies the value out (assign: one pass, where resize and memcpy zero the bytes
    // first), or hands over a tail that arrived apart (RemoteCall::resultTailApart).
    out += I + "call_.takeResultBytes(tail_, " + ref + ", " + target + ");\n";
  } else if (listOfVar) {
    out += I + "{\n";
    out += I + "  const size_t n_ = " + ref + ".length / sizeof(::lrpc::VarRef);\n";
    out += I + "  // Elements may not name more bytes than the tail holds, so a small frame cannot\n";
    out += I + "  // make the reader allocate much more than it received.\n";
    out += I + "  uint64_t total_ = " + ref + ".length;\n";
    out += I + "  " + target + ".clear();\n";
    out += I + "  " + target + ".reserve(n_);\n";
    out += I + "  for (size_t i_ = 0; i_ < n_; ++i_) {\n";
    out += I + "    ::lrpc::VarRef e_;\n";
    out += I + "    std::memcpy(&e_, " + src + " + i_ * sizeof e_, sizeof e_);\n";
    out += I + "    total_ += e_.length;\n";
    out += I + "    if (!::lrpc::detail::varRefOk(e_, tail_.size(), 1) || total_ > tail_.size()" +
           (f.maxBytes ? " || total_ > " + std::to_string(f.maxBytes) : std::string()) + ") {\n";
    out += I + "      " + bad + "\n";
    out += I + "    }\n";
    if (e.kind == Kind::kText) {
      out += I + "    " + target + ".emplace_back(reinterpret_cast<const char*>(tail_.data() + e_.offset), e_.length);\n";
    } else {
      out += I + "    const auto* p_ = reinterpret_cast<const uint8_t*>(tail_.data() + e_.offset);\n";
      out += I + "    " + target + ".emplace_back(p_, p_ + e_.length);\n";
    }
    out += I + "  }\n";
    out += I + "}\n";
  } else if (e.kind == Kind::kBool) {
    out += I + target + ".resize(" + ref + ".length);\n";
    out += I + "for (size_t i_ = 0; i_ < " + ref + ".length; ++i_) " + target + "[i_] = tail_[" + ref +
           ".offset + i_] != std::byte{0};\n";
  } else {
    out += I + target + ".resize(" + ref + ".length / " + size + ");\n";
    out += I + "if (" + ref + ".length != 0) std::memcpy(" + target + ".data(), " + src + ", " + ref + ".length);\n";
    if (!e.boolOffsets.empty()) {
      out += I + "for (auto& v_ : " + target + ") {\n";
      emitBoolFix("v_", e.boolOffsets, in + 2, out);
      out += I + "}\n";
    }
  }
}

// ---- Client -------------------------------------------------------------------------------

bool usesCaps(const Method& m);
std::string halfParams(const Method& m, bool in);

// Client::Async, what client.async() returns: each method starts its call and returns an
// lrpc::Pending of what the synchronous method returns (runtime/pending.h).
void emitClientAsync(const InterfaceDecl& d, const std::set<std::string>& complete, std::string& out,
                     std::string& later) {
  out += "\n  // Starts calls without waiting for them (runtime/pending.h): each method copies its\n";
  out += "  // arguments, starts the call and returns an lrpc::Pending of what the synchronous one\n";
  out += "  // returns. With a queue, co_await and then() complete through queue.poll().\n";
  out += "  class Async {\n";
  out += "   public:\n";
  for (const auto& m : d.methods) {
    const std::string caps = usesCaps(m) ? ", caps_" : "";
    const std::string unused = usesCaps(m) ? "" : " (void)caps_;";
    const std::string head = "::lrpc::Pending<" + returnType(m) + "> ";
    std::string params = "(";  // not "(" + ...: g++ 12 -O3 warns falsely (-Wrestrict) on literal + string
    params += paramList(m, true) + ") const";
    std::string body;
    body += "  return ::lrpc::detail::startAsync<" + returnType(m) + ">(\n";
    body += "      binding_, " + d.cppName + "::" + m.constName + ", options_, queue_,\n";
    body += "      [&](auto& call_, ::lrpc::detail::ClientCaps& caps_) {" + unused + " return " + m.name + "In_(call_" +
            caps + argNames(m) + "); },\n";
    body += "      [](auto& call_, ::lrpc::detail::ClientCaps& caps_) {" + unused + " return " + m.name + "Out_(call_" +
            caps + "); });\n";
    if (returnsLaterClient(d, m, complete)) {
      out += "    " + head + m.name + params + ";\n";
      later += "inline " + head + d.relName + "::Client::Async::" + m.name + params + " {\n" + body + "}\n\n";
    } else {
      out += "    " + head + m.name + params + " {\n" + indentLines(body, 4) + "    }\n";
    }
  }
  out += "\n   private:\n";
  out += "    friend class Client;\n";
  out += "    Async(std::shared_ptr<::lrpc::Binding> binding, const ::lrpc::CallOptions& options,\n";
  out += "          std::shared_ptr<::lrpc::detail::CompletionState> queue)\n";
  out += "        : binding_(std::move(binding)), options_(options), queue_(std::move(queue)) {}\n";
  out += "    std::shared_ptr<::lrpc::Binding> binding_;\n";
  out += "    ::lrpc::CallOptions options_;\n";
  out += "    std::shared_ptr<::lrpc::detail::CompletionState> queue_;\n";
  out += "  };\n";
  out += "  // Calls that the caller completes (wait(), ready(), or co_await in place).\n";
  out += "  Async async() const { return Async(binding_, options_, nullptr); }\n";
  out += "  // Calls that `queue` completes too: co_await resumes, and then() runs, from queue.poll().\n";
  out += "  Async async(::lrpc::Completions& queue) const { return Async(binding_, options_, queue.state()); }\n";
}

// `later` collects the definitions that must follow every class (returnsLaterClient).
void emitClientClass(const InterfaceDecl& d, const std::set<std::string>& complete, std::string& out,
                     std::string& later) {
  out += "// Calls " + d.name + " through a binding, same host or remote. Copies share the binding.\n";
  out += "class " + d.relName + "::Client {\n";
  out += " public:\n";
  out += "  // An unbound client: every call fails with kBindingRejected.\n";
  out += "  Client();\n";
  out += "  // Calls go through `binding`, which must have been made for " + d.name + "::kDescriptor;\n";
  out += "  // a null or different binding makes every call fail with kBindingRejected.\n";
  out += "  explicit Client(std::shared_ptr<::lrpc::Binding> binding, const ::lrpc::CallOptions& options = {});\n\n";
  out += "  // The capability a struct field or List element holds (runtime/codec.h, Cap).\n";
  out += "  Client(const ::lrpc::Cap<" + d.cppName + ">& cap) : Client(cap.binding()) {}  // NOLINT: implicit\n";
  out += "  operator ::lrpc::Cap<" + d.cppName + ">() const { return ::lrpc::Cap<" + d.cppName +
         ">(binding_); }  // NOLINT: implicit\n";
  out += "  // The same binding with other per-call options (e.g. a deadline).\n";
  out += "  Client withOptions(const ::lrpc::CallOptions& options) const { return Client(binding_, options); }\n";
  out += "  // A client whose calls run `impl` in this process; as a capability in a frame it hands `impl`\n";
  out += "  // to the peer, which calls it through the same binding (runtime/capability.h).\n";
  out += "  static Client serve(std::shared_ptr<Server> impl);\n";
  out += "  // The binding calls use (a rejecting stand-in when the client is unbound).\n";
  out += "  const std::shared_ptr<::lrpc::Binding>& binding() const noexcept { return binding_; }\n";
  if (!d.prefixBases.empty()) {
    out += "  // A " + d.name + " is each interface it extends first (kPrefixBases): their methods open\n";
    out += "  // its PDL, so their clients call it through the same binding.\n";
  }
  for (const auto& [id, base] : d.prefixBases) {
    out += "  operator " + base + "::Client() const { return " + base + "::Client(binding_, options_); }  // NOLINT: implicit\n";
    out += "  operator ::lrpc::Cap<" + base + ">() const { return ::lrpc::Cap<" + base +
           ">(binding_); }  // NOLINT: implicit\n";
  }
  if (!d.otherBases.empty()) {
    out += "  // Every other interface it extends: their methods sit further into its PDL, so their\n";
    out += "  // clients call it through an adaptor served in this process, one per conversion.\n";
  }
  for (const auto& o : d.otherBases) {
    out += "  operator " + o.cppName + "::Client() const;  // NOLINT: implicit\n";
    out += "  operator ::lrpc::Cap<" + o.cppName + ">() const;  // NOLINT: implicit\n";
  }
  for (const auto& m : d.methods) {
    out += '\n';  // not "\n" + ...: g++ 12 -O3 warns falsely (-Wrestrict) on literal + string
    out += docLines(m.doc, 2);
    if (m.stream) {
      out += "  // -> stream: no results. Each call returns after the server has run it, so calls made\n";
      out += "  // one after another arrive in order; async() overlaps them without keeping the order.\n";
    }
    const std::string params = "(" + paramList(m, true) + ") const";
    std::string body;
    body += "  if (binding_->remote) [[unlikely]] {\n";
    body += "    ::lrpc::RemoteCall call_(*binding_, " + d.cppName + "::" + m.constName + ", options_);\n";
    body += "    return " + m.name + "Via(call_" + argNames(m) + ");\n";
    body += "  }\n";
    body += "  ::lrpc::LocalCall call_(*binding_, " + d.cppName + "::" + m.constName + ", options_);\n";
    body += "  return " + m.name + "Via(call_" + argNames(m) + ");\n";
    if (returnsLaterClient(d, m, complete)) {
      out += "  " + returnType(m) + " " + m.name + params + ";  // defined below the classes\n";
      later += "inline " + returnType(m) + " " + d.relName + "::Client::" + m.name + params + " {\n" + body + "}\n\n";
    } else {
      out += "  " + returnType(m) + " " + m.name + params + " {\n" + indentLines(body, 2) + "  }\n";
    }
    if (std::any_of(m.results.begin(), m.results.end(), [](const Field& f) { return isVariable(f.type); })) {
      // Never a later client: a sole interface result is fixed-size.
      const std::string ps = paramList(m);
      out += "  // The same call, its results written into into_'s target, reusing its storage (lrpc::Into).\n";
      out += "  ::lrpc::Status " + m.name + "(" + ps + (ps.empty() ? "" : ", ") + "::lrpc::Into<" + replyValue(m) +
             "> into_) const {\n";
      const std::string to = "    return " + m.name + "To_(call_" + argNames(m) + ", into_.target());\n";
      out += "    if (binding_->remote) [[unlikely]] {\n";
      out += "      ::lrpc::RemoteCall call_(*binding_, " + d.cppName + "::" + m.constName + ", options_);\n";
      out += "  " + to + "    }\n";
      out += "    ::lrpc::LocalCall call_(*binding_, " + d.cppName + "::" + m.constName + ", options_);\n";
      out += to + "  }\n";
    }
  }
  emitClientAsync(d, complete, out, later);
  out += "\n private:\n";
  out += "  // The copy code of each method, the same for both paths (Call: lrpc::LocalCall or lrpc::RemoteCall).\n";
  for (const auto& m : d.methods) {
    std::string ps = paramList(m);
    out += "  template <class Call>\n";
    out += "  static ::lrpc::Status " + m.name + "In_(" + halfParams(m, true) + ");\n";
    if (!m.results.empty()) {
      out += "  template <class Call>\n";
      out += "  static ::lrpc::Status " + m.name + "Read_(" + halfParams(m, false) + ", " + replyValue(m) + "& out_);\n";
    }
    out += "  template <class Call>\n";
    out += "  static " + returnType(m) + " " + m.name + "Out_(" + halfParams(m, false) + ");\n";
    if (!m.results.empty()) {
      out += "  template <class Call>\n";
      out += "  static ::lrpc::Status " + m.name + "To_(Call& call_" + (ps.empty() ? "" : ", " + ps) + ", " +
             replyValue(m) + "& out_);\n";
    }
    out += "  template <class Call>\n";
    out += "  static " + returnType(m) + " " + m.name + "Via(Call& call_" + (ps.empty() ? "" : ", " + ps) + ");\n";
  }
  out += "\n  std::shared_ptr<::lrpc::Binding> binding_;  // never null\n";
  out += "  ::lrpc::CallOptions options_;\n";
  out += "};\n\n";
}

// The result whose tail may arrive apart (RemoteCall::resultTailApart): a Data value that is
// the method's only variable-size result, so that the reply's tail is that value.
const Field* apartResult(const Method& m) {
  const auto isVar = [](const Field& f) { return isVariable(f.type); };
  const auto var = std::find_if(m.results.begin(), m.results.end(), isVar);
  if (var == m.results.end() || var->type.kind != Kind::kData) return nullptr;
  return std::count_if(m.results.begin(), m.results.end(), isVar) == 1 ? &*var : nullptr;
}

bool usesCaps(const Method& m) {
  return anyCoded(m.params) || anyCoded(m.results) || anyInterface(m.params) || anyInterface(m.results);
}

// The parameter list of a method's copy halves: the call, its capabilities when it carries
// any, then the method's own parameters (In_ only).
std::string halfParams(const Method& m, bool in) {
  std::string s = "Call& call_";
  if (usesCaps(m)) s += ", ::lrpc::detail::ClientCaps& caps_";
  std::string ps = paramList(m);
  if (in && !ps.empty()) s += ", " + ps;
  return s;
}

// A method's client copy code in two halves, In_ (arguments into the frame) and Out_ (results
// out of it), and Via, the synchronous call that runs In_, invoke() and Out_ in a row. An async
// call runs the same halves before it starts and once it has completed (runtime/async_call.h).
void emitClientVia(const InterfaceDecl& d, const Method& m, std::string& out) {
  const std::string scope = d.relName + "::Client::";
  const std::string caps = usesCaps(m) ? ", caps_" : "";
  out += "template <class Call>\n";
  out += "::lrpc::Status " + scope + m.name + "In_(" + halfParams(m, true) + ") {\n";
  WriteSpec spec{m.qualifiedName + ": argument", "::lrpc::Errc::kInvalidArgument", "call_.args()", "call_.argTail", true,
                 "call_.copyTail"};
  spec.capId = "caps_.toFrame(";
  if (m.maxDepth != 0) spec.depth = std::to_string(m.maxDepth) + "u";
  emitWrite(m.params, m.argsSize, [](const Field& f) { return f.name; }, spec, 2, out);
  if (usesCaps(m)) out += "  (void)caps_;  // used by the parameters or only by the results\n";
  if (m.params.empty()) out += "  (void)call_;\n";
  out += "  return ::lrpc::Status::ok();\n}\n\n";

  if (m.results.empty()) {
    out += "template <class Call>\n";
    out += "::lrpc::Status " + scope + m.name + "Out_(" + halfParams(m, false) + ") {\n";
    if (usesCaps(m)) out += "  (void)caps_;\n";
    out += "  (void)call_;\n";
    out += "  return ::lrpc::Status::ok();\n}\n\n";
  } else {
    const std::string value = replyValue(m);
    out += "template <class Call>\n";
    out += "::lrpc::Status " + scope + m.name + "Read_(" + halfParams(m, false) + ", " + value + "& out_) {\n";
    if (usesCaps(m)) out += "  (void)caps_;  // used by the results or only by the parameters\n";
    out += "  // The server is not trusted with our memory either: copy the results out, then check them.\n";
    out += "  " + m.frameScope + "::" + m.framePrefix + "ResultsFrame frame_;\n";
    out += "  std::memcpy(&frame_, call_.results(), sizeof frame_);\n";
    emitBoolFix("frame_", frameBoolOffsets(m.results), 2, out);
    bool anyVar = false;
    for (const auto& f : m.results) anyVar = anyVar || isVariable(f.type);
    if (anyCoded(m.results)) {
      out += "  ::lrpc::codec::TailCopy tailCopy_;  // small tails are decoded from one bulk copy\n";
      out += "  const std::span<const std::byte> tail_ = tailCopy_.of(call_.resultTail());\n";
      out += "  ::lrpc::codec::Reader rd_(tail_" + depthArg(m) + ");\n";
    } else if (anyVar) {
      out += "  const std::span<const std::byte> tail_ = call_.resultTail();\n";
    }
    const bool single = m.results.size() == 1;
    for (const auto& f : m.results) {
      const std::string target = single ? "out_" : "out_." + f.name;
      if (f.type.kind == Kind::kBool) {
        out += "  " + target + " = frame_." + f.name + " != 0;\n";
      } else if (f.type.kind == Kind::kInterface) {
        out += "  {\n";
        out += "    auto cap_ = caps_.in(frame_." + f.name + ", " + f.type.cppName + "::kDescriptor);\n";
        out += "    if (!cap_.isOk()) return cap_.status();\n";
        out += "    " + target + " = " + f.type.cppName + "::Client(std::move(*cap_));\n";
        out += "  }\n";
      } else if (!isVariable(f.type)) {
        out += "  " + target + " = frame_." + f.name + ";\n";
      } else {
        emitReadVar(f, "frame_." + f.name, target, m.qualifiedName + ": result", 2, false, out);
      }
    }
    out += "  return ::lrpc::Status::ok();\n}\n\n";

    out += "template <class Call>\n";
    out += returnType(m) + " " + scope + m.name + "Out_(" + halfParams(m, false) + ") {\n";
    out += "  " + value + " value_{};\n";
    out += "  if (::lrpc::Status s_ = " + m.name + "Read_(call_" + caps + ", value_); !s_.isOk()) return s_;\n";
    out += "  return value_;\n}\n\n";
  }

  // The synchronous call: To_ into a target (lrpc::Into, or Via's own value), Via returning it.
  std::string ps = paramList(m);
  const std::string head = "Call& call_" + (ps.empty() ? "" : ", " + ps);
  const std::string body = [&] {
    std::string b = "  if (!call_.status().isOk()) return call_.status();\n";
    if (usesCaps(m)) b += "  ::lrpc::detail::ClientCaps caps_(call_.binding());  // the capabilities this call passes\n";
    b += "  if (::lrpc::Status s_ = " + m.name + "In_(call_" + caps + argNames(m) + "); !s_.isOk()) return s_;\n";
    if (const Field* apart = apartResult(m)) {
      b += "  // The tail is that one Data value: it may arrive apart, straight into the value.\n";
      b += "  call_.resultTailApart(" + std::string(m.results.size() == 1 ? "out_" : "out_." + apart->name) + ");\n";
    }
    b += "  if (::lrpc::Status s_ = call_.invoke(); !s_.isOk()) return s_;\n";
    return b;
  }();
  out += "template <class Call>\n";
  if (m.results.empty()) {
    out += "::lrpc::Status " + scope + m.name + "Via(" + head + ") {\n" + body;
    out += "  return " + m.name + "Out_(call_" + caps + ");\n}\n\n";
    return;
  }
  out += "::lrpc::Status " + scope + m.name + "To_(" + head + ", " + replyValue(m) + "& out_) {\n" + body;
  out += "  return " + m.name + "Read_(call_" + caps + ", out_);\n}\n\n";
  out += "template <class Call>\n";
  out += returnType(m) + " " + scope + m.name + "Via(" + head + ") {\n";
  out += "  " + replyValue(m) + " value_{};\n";
  out += "  if (::lrpc::Status s_ = " + m.name + "To_(call_" + argNames(m) + ", value_); !s_.isOk()) return s_;\n";
  out += "  return value_;\n}\n\n";
}

// ---- Server -------------------------------------------------------------------------------

void emitServerClass(const InterfaceDecl& d, std::string& out) {
  out += "// Implement this to serve " + d.name + "; export it with the runtime or the transport.\n";
  out += "// Handlers may throw: the caller gets kServerFault with the exception's what().\n";
  out += "class " + d.relName + "::Server {\n";
  out += " public:\n";
  out += "  virtual ~Server() = default;\n";
  for (const auto& m : d.methods) {
    out += '\n';  // not "\n" + ...: g++ 12 -O3 warns falsely (-Wrestrict) on literal + string
    out += docLines(m.doc, 2);
    out += "  virtual " + handlerSignature(m) + " = 0;\n";
  }
  out += "\n  // Validates the frame of `procedure`, copies the arguments out of it (the client may still\n";
  out += "  // write it), runs the handler on `self` (a " + d.name + "::Server*), writes the results.\n";
  out += "  static ::lrpc::Status dispatch(void* self, uint32_t procedure, ::lrpc::ServerCall& call) noexcept;\n";
  out += "};\n\n";
}

std::string dispatchFnName(const InterfaceDecl& d, const Method& m) {
  std::string scope = d.relName;
  for (size_t at; (at = scope.find("::")) != std::string::npos;) scope.erase(at, 2);
  return "dispatch" + pascal(scope) + m.framePrefix;
}

// $Lrpc.views: one argument read as a view of the private tail (rd_), every kind through
// runtime/codec_view.h, with one budget for the whole tail and maxBytes as the bytes it spent.
void emitReadView(const Method& m, const Field& f, std::string& out) {
  const std::string v = f.name + "View_";
  out += "  " + viewType(f.type) + " " + v + "{};\n";
  if (f.maxBytes) out += "  const uint64_t " + f.name + "Budget_ = rd_.budget;\n";
  out += "  if (!::lrpc::codec::get(rd_, frame_." + f.name + ", " + v + ")" +
         (f.maxBytes ? " || " + f.name + "Budget_ - rd_.budget > " + std::to_string(f.maxBytes) : std::string()) +
         ") {\n";
  out += "    if (!caps_.error.isOk()) return caps_.error;  // a capability id inside it\n";
  out += "    return ::lrpc::Status(::lrpc::Errc::kBadFrame, " +
         quoted(m.qualifiedName + ": argument " + f.schemaName +
                " is malformed: a value lies outside the tail, is misaligned, nests too deep, names bytes twice "
                "or is over its size limit") + ");\n";
  out += "  }\n";
}

void emitResultWrite(const Method& m, std::string& out);
void emitDeferredCall(const InterfaceDecl& d, const Method& m, const std::string& argText, std::string& out);

void emitDispatchMethod(const InterfaceDecl& d, const Method& m, std::string& out) {
  out += "::lrpc::Status " + dispatchFnName(d, m) + "(" + d.cppName + "::Server& server_, ::lrpc::ServerCall& call_) {\n";
  std::vector<std::string> callArgs;
  bool anyVar = false;
  for (const auto& f : m.params) anyVar = anyVar || isVariable(f.type);
  const bool asViews = m.views && anyVar;
  // A deferred method's results are written by its writer (emitDeferredWriter), later.
  if (anyCoded(m.params) || (anyCoded(m.results) && !m.deferred) || asViews) {
    out += "  ::lrpc::detail::ServerCaps caps_(call_);  // capabilities inside the values\n";
  }
  if (!m.params.empty()) {
    out += "  // Copy \"E\": take the fixed part out of the (shared) frame before looking at it.\n";
    out += "  const std::span<const std::byte> args_ = call_.args();\n";
    out += "  if (args_.size() < " + std::to_string(m.argsSize) + ") {\n";
    out += "    return ::lrpc::Status(::lrpc::Errc::kBadFrame, " +
           quoted(m.qualifiedName + ": argument frame shorter than " + std::to_string(m.argsSize) + " bytes") + ");\n";
    out += "  }\n";
    out += "  " + m.frameScope + "::" + m.framePrefix + "ArgsFrame frame_;\n";
    out += "  std::memcpy(&frame_, args_.data(), sizeof frame_);\n";
    emitBoolFix("frame_", frameBoolOffsets(m.params), 2, out);
    if (anyCoded(m.params) && !asViews) {
      out += "  std::span<const std::byte> tail_ = call_.argTail();\n";
      out += "  ::lrpc::codec::TailCopy tailCopy_;  // small tails are decoded from one bulk copy\n";
      out += "  if (::lrpc::Status s_ = ::lrpc::detail::decodableArgTail(call_, tail_, tailCopy_); !s_.isOk()) return s_;\n";
    } else if (anyVar) {
      out += "  const std::span<const std::byte> tail_ = call_.argTail();\n";
    }
    if (asViews) {
      out += "  ::lrpc::ViewArena arena_;  // what the views point into, until the handler returns\n";
      out += "  if (::lrpc::Status s_ = call_.awaitArgTail(tail_.size()); !s_.isOk()) return s_;\n";
      out += "  // Copy \"E\" of the whole tail at once: the views read memory the client cannot write.\n";
      out += "  const std::span<const std::byte> own_ = call_.argTailPrivate() ? tail_ : arena_.copy(tail_);\n";
      out += "  ::lrpc::codec::Reader rd_(own_" + depthArg(m) + ", &arena_);\n";
    } else if (anyCoded(m.params)) {
      out += "  ::lrpc::codec::Reader rd_(tail_" + depthArg(m) + ");\n";
    }
    for (const auto& f : m.params) {
      if (f.type.kind == Kind::kBool) {
        callArgs.push_back("frame_." + f.name + " != 0");
        continue;
      }
      if (f.type.kind == Kind::kInterface) {
        out += "  auto " + f.name + "ArgCap_ = ::lrpc::detail::capArg(call_, frame_." + f.name + ", " + f.type.cppName +
               "::kDescriptor);\n";
        out += "  if (!" + f.name + "ArgCap_.isOk()) return " + f.name + "ArgCap_.status();\n";
        out += "  const " + f.type.cppName + "::Client " + f.name + "Store_(std::move(*" + f.name + "ArgCap_));\n";
        callArgs.push_back(f.name + "Store_");
        continue;
      }
      if (!isVariable(f.type)) {
        callArgs.push_back("frame_." + f.name);
        continue;
      }
      if (asViews) {
        emitReadView(m, f, out);
        callArgs.push_back(f.name + "View_");
        continue;
      }
      const std::string store = f.name + "Store_";
      const std::string view = f.name + "View_";
      if (!f.inPlace) out += "  " + valueType(f.type) + " " + store + ";\n";
      if (!f.inPlace && f.type.kind == Kind::kData) {
        out += "  const ::lrpc::detail::SpareBytes " + f.name + "Spare_(call_, " + store + ");  // a large copy's buffer, kept\n";
      }
      if (f.type.kind == Kind::kData) out += "  std::span<const uint8_t> " + view + ";\n";
      emitReadVar(f, "frame_." + f.name, store, m.qualifiedName + ": argument", 2, true, out, view);
      Type e = elemOf(f.type);
      if (f.type.kind == Kind::kStruct) {
        callArgs.push_back(store);
      } else if (f.type.kind == Kind::kText) {
        callArgs.push_back("std::string_view(" + store + ")");
      } else if (f.type.kind == Kind::kData) {
        callArgs.push_back(view);
      } else if (e.kind == Kind::kBool) {
        out += "  std::unique_ptr<bool[]> " + f.name + "Bools_ = std::make_unique<bool[]>(" + store + ".size());\n";
        out += "  for (size_t i_ = 0; i_ < " + store + ".size(); ++i_) " + f.name + "Bools_[i_] = " + store + "[i_];\n";
        callArgs.push_back("std::span<const bool>(" + f.name + "Bools_.get(), " + store + ".size())");
      } else if (e.kind == Kind::kText || e.kind == Kind::kData) {
        const std::string views = f.name + "Views_";
        out += "  const std::vector<" + elemParamType(e) + "> " + views + "(" + store + ".begin(), " + store + ".end());\n";
        callArgs.push_back("std::span<const " + elemParamType(e) + ">(" + views + ")");
      } else {
        callArgs.push_back("std::span<const " + memberType(e) + ">(" + store + ")");
      }
    }
  }
  if (m.params.empty() && m.results.empty()) out += "  static_cast<void>(call_);  // no arguments, no results\n";
  std::string argText;
  for (size_t i = 0; i < callArgs.size(); ++i) argText += (i ? ", " : "") + callArgs[i];
  if (m.deferred) {
    emitDeferredCall(d, m, argText, out);
    return;
  }
  out += "  std::optional<" + returnType(m) + "> result_;\n";
  out += "  try {\n";
  out += "    result_.emplace(server_." + m.name + "(" + argText + "));\n";
  out += "  } catch (...) {\n";
  out += "    return ::lrpc::detail::handlerThrew(" + quoted(m.qualifiedName) + ");\n";
  out += "  }\n";
  if (m.results.empty()) {
    out += "  return std::move(*result_);\n}\n\n";
    return;
  }
  out += "  if (!result_->isOk()) return result_->status();\n";
  // Not const: a large value may be moved out (ServerCall::moveResultTail).
  out += m.results.size() == 1 ? "  auto& value_ = result_->value();\n" : "  auto& out_ = result_->value();\n";
  emitResultWrite(m, out);
  out += "  return ::lrpc::Status::ok();\n}\n\n";
}

// The handler's results (value_ for one, out_ for several) into call_'s result memory.
void emitResultWrite(const Method& m, std::string& out) {
  const bool single = m.results.size() == 1;
  WriteSpec spec{m.qualifiedName + ": handler's result", "::lrpc::Errc::kServerFault", "call_.results()",
                 "call_.resultTail", false, "std::memcpy", true};
  spec.capId = "::lrpc::detail::capResult(call_, ";
  if (m.maxDepth != 0) spec.depth = std::to_string(m.maxDepth) + "u";
  emitWrite(m.results, m.resultsSize,
            [single](const Field& f) { return single ? std::string("value_") : "out_." + f.name; }, spec, 2, out);
}

std::string writerFnName(const InterfaceDecl& d, const Method& m) {
  return "write" + dispatchFnName(d, m).substr(std::string("dispatch").size());
}

// A deferred method's results are written when its Reply is sent, by this function.
void emitDeferredWriter(const InterfaceDecl& d, const Method& m, std::string& out) {
  if (m.results.empty()) return;
  out += "::lrpc::Status " + writerFnName(d, m) + "(::lrpc::ServerCall& call_, " + replyValue(m) +
         (m.results.size() == 1 ? "& value_) {\n" : "& out_) {\n");
  if (anyCoded(m.results)) out += "  ::lrpc::detail::ServerCaps caps_(call_);  // capabilities inside the values\n";
  emitResultWrite(m, out);
  out += "  return ::lrpc::Status::ok();\n}\n\n";
}

// The handler of a deferred method gets a Reply that owns the call from here on; what it does
// not answer or keep is answered for it (a throw with its text, a drop by ~Reply).
void emitDeferredCall(const InterfaceDecl& d, const Method& m, const std::string& argText, std::string& out) {
  out += "  ::lrpc::Result<std::unique_ptr<::lrpc::DeferredCall>> deferred_ = call_.defer();\n";
  out += "  if (!deferred_.isOk()) return deferred_.status();\n";
  out += "  " + replyType(m) + " reply_(std::move(*deferred_), " +
         (m.results.empty() ? std::string() : "&" + writerFnName(d, m) + ", ") + quoted(m.qualifiedName) + ");\n";
  out += "  try {\n";
  out += "    server_." + m.name + "(" + argText + (argText.empty() ? "" : ", ") + "std::move(reply_));\n";
  out += "  } catch (...) {\n";
  out += "    if (reply_) reply_.fail(::lrpc::detail::handlerThrew(" + quoted(m.qualifiedName) + "));\n";
  out += "  }\n";
  out += "  return ::lrpc::Status::ok();\n}\n\n";
}

// A C++ name as one identifier piece: "::calc::Calc" -> "_calc_Calc".
std::string flatName(const std::string& cppName) {
  std::string out;
  for (size_t i = 0; i < cppName.size(); ++i) {
    if (cppName[i] != ':') {
      out += cppName[i];
    } else if (i + 1 < cppName.size() && cppName[i + 1] == ':') {
      out += '_';  // one underscore per "::"
      ++i;
    }
  }
  return out;
}

// The name of the generated class that forwards d's calls ("Forwarder_calc_Calc").
std::string forwarderName(const InterfaceDecl& d) { return "Forwarder" + flatName(d.cppName); }

// `name`: a serverOf::Server whose methods (those of d that `keep` accepts) call the same
// method on a d::Client. Proxies and second-base adaptors are both this.
template <class Keep>
void emitForwardingClass(const std::string& name, const std::string& serverOf, const InterfaceDecl& d, Keep keep,
                         std::string& out) {
  out += "class " + name + " final : public " + serverOf + "::Server {\n";
  out += " public:\n";
  out += "  explicit " + name + "(" + d.cppName + "::Client target) : target_(std::move(target)) {}\n";
  for (const auto& m : d.methods) {
    if (!keep(m)) continue;
    std::string args;
    for (const auto& p : m.params) args += (args.empty() ? "" : ", ") + p.name;
    // A deferred method is answered at once with the target's answer.
    const std::string body = m.deferred ? "reply.settle(target_." + m.name + "(" + args + "));"
                                        : "return target_." + m.name + "(" + args + ");";
    out += "  " + handlerSignature(m) + " override { " + body + " }\n";
  }
  out += "\n private:\n";
  out += "  " + d.cppName + "::Client target_;\n";
  out += "};\n\n";
}

// A Server that calls the same method on a Client of another binding: what a capability
// becomes when it is passed on through a binding other than the one it came on (a proxy;
// InterfaceDescriptor::forward).
void emitForwarder(const InterfaceDecl& d, std::string& out) {
  const std::string name = forwarderName(d);
  out += "// Passes every call of " + d.name + " on to a capability of another binding.\n";
  emitForwardingClass(name, d.cppName, d, [](const Method&) { return true; }, out);
  out += "std::shared_ptr<void> " + name + "Make(std::shared_ptr<::lrpc::Binding> target) {\n";
  out += "  auto f = std::make_shared<" + name + ">(" + d.cppName + "::Client(std::move(target)));\n";
  out += "  void* self = static_cast<" + d.cppName + "::Server*>(f.get());\n";
  out += "  return std::shared_ptr<void>(std::move(f), self);\n";
  out += "}\n\n";
}

// The class that serves `base` (an interface d extends but does not open its PDL with) by
// calling the same methods on a d::Client: "Forwarder_calc_Calc_As_calc_Base".
std::string adaptorName(const InterfaceDecl& d, const InterfaceDecl::OtherBase& base) {
  return forwarderName(d) + "_As" + flatName(base.cppName);
}

// Per other base: a base::Server whose every method calls d's Client (which has them all,
// further into its PDL), and d::Client's conversions to base::Client and Cap<base> through it.
void emitBaseAdaptors(const InterfaceDecl& d, std::string& out) {
  for (const auto& o : d.otherBases) {
    out += "// " + d.name + " seen as " + o.cppName + ": its calls go on to the " + d.name + " client.\n";
    emitForwardingClass(adaptorName(d, o), o.cppName, d,
                        [&o](const Method& m) { return o.scopes.count(m.frameScope) != 0; }, out);
  }
}

void emitBaseConversions(const InterfaceDecl& d, std::string& out) {
  for (const auto& o : d.otherBases) {
    out += d.relName + "::Client::operator " + o.cppName + "::Client() const {\n";
    out += "  if (binding_->remote && binding_->channel->isNullCap()) return " + o.cppName + "::Client();  // null stays null\n";
    out += "  return " + o.cppName + "::Client::serve(std::make_shared<" + adaptorName(d, o) + ">(*this));\n";
    out += "}\n\n";
    out += d.relName + "::Client::operator ::lrpc::Cap<" + o.cppName + ">() const {\n";
    out += "  return ::lrpc::Cap<" + o.cppName + ">(operator " + o.cppName + "::Client().binding());\n";
    out += "}\n\n";
  }
}

void emitServerDispatch(const InterfaceDecl& d, std::string& out) {
  out += "::lrpc::Status " + d.relName + "::Server::dispatch(void* self, uint32_t procedure, ::lrpc::ServerCall& call) noexcept {\n";
  if (!d.methods.empty()) {
    out += "  auto& server = *static_cast<" + d.cppName + "::Server*>(self);\n";
    out += "  try {  // the copies allocate: running out of memory is an error, not a crash\n";
    out += "    switch (procedure) {\n";
    for (const auto& m : d.methods) {
      out += "      case " + m.constName + ": return " + dispatchFnName(d, m) + "(server, call);\n";
    }
    if (d.carriesCaps) out += "      case kLrpcCapCall: return ::lrpc::detail::serveCapCall(call);\n";
    out += "      default: break;\n";
    out += "    }\n";
  } else {
    out += "  static_cast<void>(self);\n";
    out += "  static_cast<void>(call);\n";
    out += "  try {  // the message allocates: running out of memory is an error, not a crash\n";
  }
  out += "    return ::lrpc::Status(::lrpc::Errc::kBadFrame, " + quoted(d.descriptorName + ": no procedure ") +
         " + std::to_string(procedure));\n";
  out += "  } catch (const std::bad_alloc&) {\n";
  out += "    return ::lrpc::Status(::lrpc::Errc::kResourceExhausted);\n";
  out += "  }\n";
  out += "}\n\n";
}

std::string nsOpen(const FileModel& f) { return f.cppNamespace.empty() ? "" : "namespace " + f.cppNamespace + " {\n\n"; }
std::string nsClose(const FileModel& f) {
  return f.cppNamespace.empty() ? "" : "}  // namespace " + f.cppNamespace + "\n";
}

}  // namespace

FileText emitFile(const FileModel& f) {
  FileText text;
  // Without those LRPC_SKIP_UNSUPPORTED left out (and what is nested in them); nested ones
  // after their enclosing interface.
  std::vector<const InterfaceDecl*> generated;
  std::function<void(const StructDecl&)> inStruct;
  std::function<void(const InterfaceDecl&)> collect = [&](const InterfaceDecl& d) {
    if (!d.refusals.empty()) return;
    // Nested ones first: the outer interface's stubs may pass their Clients (Calculator.Value).
    for (const auto& s : d.nestedStructs) inStruct(s);
    for (const auto& n : d.nestedInterfaces) collect(n);
    generated.push_back(&d);
  };
  inStruct = [&](const StructDecl& s) {
    for (const auto& n : s.nestedStructs) inStruct(n);
    for (const auto& n : s.nestedInterfaces) collect(n);
  };
  for (const auto& s : f.structs) inStruct(s);
  for (const auto& d : f.interfaces) collect(d);
  const std::string banner = "// Generated by capnpc-lrpc from " + f.sourceName +
                             ". DO NOT EDIT: change the schema and rebuild.\n";
  std::string& h = text.header;
  h += banner;
  h += "// The layout and API are described in stubgen/generated_code.md.\n";
  h += "#pragma once\n\n";
  h += "#include <cstddef>\n#include <cstdint>\n#include <cstring>\n#include <initializer_list>\n#include <limits>\n#include <memory>\n"
       "#include <span>\n#include <string>\n#include <string_view>\n#include <type_traits>\n#include <vector>\n\n";
  h += "#include \"runtime/stub_support.h\"\n";
  for (const auto& inc : f.includes) h += "#include \"" + inc + "\"\n";
  h += "\n#if LRPC_STUB_ABI_VERSION != 1\n";
  h += "#error \"" + f.baseName + ".lrpc.h was generated for lrpc stub ABI 1: regenerate it with this tree's capnpc-lrpc\"\n";
  h += "#endif\n\n";
  if (!f.doc.empty()) h += docLines(f.doc, 0) + "\n";
  h += nsOpen(f);
  for (const auto& e : f.enums) {
    emitEnum(e, 0, h);
    h += "\n";
  }
  emitForwards(f.structs, 0, h);
  // Interfaces a struct holds capabilities of (a Cap<Foo> member) before their stubs.
  std::set<uint64_t> held;
  std::function<void(const Type&)> capsIn = [&](const Type& t) {
    if (t.kind == Kind::kInterface && t.id != 0) held.insert(t.id);  // 0: lrpc::Capability
    if (t.kind == Kind::kList && t.elemType) capsIn(*t.elemType);
  };
  forEachStruct(f, [&](const StructDecl& s) {
    for (const auto& fl : s.fields) capsIn(fl.type);
  });
  for (const auto& d : f.interfaces) {
    if (d.refusals.empty() && held.count(d.id) != 0) h += "struct " + d.name + ";\n";
  }
  if (!held.empty()) h += "\n";
  for (auto [isInterface, i] : f.order) {
    if (isInterface) {
      emitInterfaceStruct(f.interfaces[i], h);
      continue;
    }
    const StructDecl& s = f.structs[i];
    std::string after;
    emitStruct(s, 0, h, s.name, &after);
    h += after;
    emitStructAsserts(s, h);
    h += "\n";
  }
  // Every struct is complete now: the functions that write and read them in a tail.
  std::vector<const StructDecl*> structs;
  forEachStruct(f, [&](const StructDecl& s) { structs.push_back(&s); });
  emitViews(structs, f.cppNamespace, h);
  emitCodecFunctions(structs, h);
  std::set<std::string> complete{"::lrpc::Capability"};  // Client classes defined so far
  std::string later;
  for (const auto* dp : generated) {
    const InterfaceDecl& d = *dp;
    for (size_t i = d.ownBegin; i < d.methods.size(); ++i) {
      const Method& m = d.methods[i];
      if (holdsCapability(m)) emitResultsStruct(m, d.relName + "::" + m.framePrefix + "Results", 0, complete, h);
    }
    emitClientClass(d, complete, h, later);
    complete.insert(d.cppName);
    emitServerClass(d, h);
  }
  if (!later.empty()) h += "// ---- Client methods that return a capability of a Client defined after theirs.\n\n" + later;
  if (!generated.empty()) {
    h += "// ---- The client's copy code. Inline, so that a call compiles to stores at constant offsets.\n\n";
  }
  for (const auto* d : generated) {
    for (const auto& m : d->methods) emitClientVia(*d, m, h);
  }
  h += nsClose(f);

  std::string& c = text.source;
  c += banner;
  c += "#include \"" + f.baseName + ".lrpc.h\"\n\n";
  c += "#include <new>\n#include <optional>\n#include <string>\n#include <utility>\n\n";
  if (!generated.empty()) {
    c += "namespace {\n\n";
    for (const auto* d : generated) {
      for (const auto& m : d->methods) {
        if (m.deferred) emitDeferredWriter(*d, m, c);
        emitDispatchMethod(*d, m, c);
      }
    }
    for (const auto* d : generated) emitForwarder(*d, c);
    for (const auto* d : generated) emitBaseAdaptors(*d, c);
    c += "}  // namespace\n\n";
  }
  c += nsOpen(f);
  for (const auto* dp : generated) {
    const InterfaceDecl& d = *dp;
    c += "const ::lrpc::InterfaceDescriptor " + d.relName + "::kDescriptor = {\n";
    c += "    " + quoted(d.descriptorName) + ",\n";
    c += "    " + hex64(d.id) + ",\n";
    c += "    " + hex64(d.signatureHash) + ",  // FNV-1a 64 over method names, ordinals and types\n";
    c += "    " + d.relName + "::kProcedures,\n";
    c += "    " + d.relName + "::kProcedureCount,\n";
    c += "    &" + d.relName + "::Server::dispatch,\n";
    c += d.carriesCaps ? "    true,  // carries capabilities: the last procedure is the tunnel\n"
                       : "    false,  // carries no capabilities\n";
    if (!d.prefixBases.empty()) {
      c += "    " + d.relName + "::kPrefixBases,\n";
      c += "    " + std::to_string(d.prefixBases.size()) + ",\n";
    } else {
      c += "    nullptr,  // extends nothing\n";
      c += "    0,\n";
    }
    c += "    &" + forwarderName(d) + "Make,\n";
    c += "};\n\n";
    c += d.relName + "::Client::Client() : Client(nullptr) {}\n\n";
    c += d.relName + "::Client::Client(std::shared_ptr<::lrpc::Binding> binding, const ::lrpc::CallOptions& options)\n";
    c += "    : binding_(::lrpc::detail::checkedBinding(std::move(binding), " + d.relName + "::kDescriptor)), options_(options) {}\n\n";
    c += d.relName + "::Client " + d.relName + "::Client::serve(std::shared_ptr<" + d.relName + "::Server> impl) {\n";
    c += "  if (!impl) return Client();\n";
    c += "  void* self = static_cast<" + d.relName + "::Server*>(impl.get());\n";
    c += "  return Client(::lrpc::detail::serveInProcess({&kDescriptor, std::shared_ptr<void>(std::move(impl), self)}));\n";
    c += "}\n\n";
    emitBaseConversions(d, c);
    emitServerDispatch(d, c);
  }
  c += nsClose(f);
  return text;
}

}  // namespace lrpc::stubgen
