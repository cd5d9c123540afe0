// The functions runtime/codec.h calls to write and read a coded struct inside a frame's tail
// (lrpcHead, lrpcSize, lrpcPut, lrpcGet, for the struct and for its View), the conversions
// between the two, the union setters, and lrpcScrub / lrpcFixBools for flattened structs.
#include <algorithm>
#include <functional>

#include "stubgen/cpp_text.h"
#include "stubgen/emit_struct.h"
#include "stubgen/names.h"
#include "stubgen/type_rules.h"
#include "stubgen/value_code.h"

namespace lrpc::stubgen {
namespace {

std::string whichName(const StructDecl& s, const Field& f) { return s.cppName + "::Which::k" + pascal(f.schemaName); }

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

}  // namespace

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
