// The copy code of value_code.h, kind by kind.
#include "stubgen/value_code.h"

#include "stubgen/cpp_text.h"
#include "stubgen/names.h"
#include "stubgen/type_rules.h"

namespace lrpc::stubgen {
namespace {

std::string elemSize(const Type& list) { return "sizeof(" + frameType(elemOf(list)) + ")"; }

}  // namespace

void emitFramePut(const Field& f, const std::string& v, const std::string& capId, const std::string& I,
                  std::string& out) {
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
    out += I + "const ::lrpc::Result<uint32_t> " + f.name + "Cap_ = " + capId + v + ".binding());\n";
    out += I + "if (!" + f.name + "Cap_.isOk()) return " + f.name + "Cap_.status();\n";
    out += I + "std::memcpy(fixed_ + " + off + ", &*" + f.name + "Cap_, sizeof(uint32_t));\n";
  } else {
    out += I + "std::memcpy(fixed_ + " + off + ", &" + v + ", sizeof " + v + ");\n";
    // The caller's struct padding holds whatever its memory held before.
    emitZeroPadding("fixed_ + " + off, paddingInside(f.type), I, out);
  }
}

std::string frameArg(const Field& f, std::string& out) {
  if (f.type.kind == Kind::kBool) return "frame_." + f.name + " != 0";
  if (f.type.kind == Kind::kInterface) {
    out += "  auto " + f.name + "ArgCap_ = ::lrpc::detail::capArg(call_, frame_." + f.name + ", " + f.type.cppName +
           "::kDescriptor);\n";
    out += "  if (!" + f.name + "ArgCap_.isOk()) return " + f.name + "ArgCap_.status();\n";
    out += "  const " + f.type.cppName + "::Client " + f.name + "Store_(std::move(*" + f.name + "ArgCap_));\n";
    return f.name + "Store_";
  }
  return "frame_." + f.name;
}

void emitFrameResult(const Field& f, const std::string& target, std::string& out) {
  if (f.type.kind == Kind::kBool) {
    out += "  " + target + " = frame_." + f.name + " != 0;\n";
  } else if (f.type.kind == Kind::kInterface) {
    out += "  {\n";
    out += "    auto cap_ = caps_.in(frame_." + f.name + ", " + f.type.cppName + "::kDescriptor);\n";
    out += "    if (!cap_.isOk()) return cap_.status();\n";
    out += "    " + target + " = " + f.type.cppName + "::Client(std::move(*cap_));\n";
    out += "  }\n";
  } else {
    out += "  " + target + " = frame_." + f.name + ";\n";
  }
}

void emitTailSize(const Field& f, const std::string& v, const WriteSpec& spec, const std::string& I,
                  std::string& out) {
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
}

void emitTailPut(const Field& f, const std::string& v, const std::string& at, const WriteSpec& spec,
                 const std::string& I, std::string& out) {
  Type e = elemOf(f.type);
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

void emitReadVar(const Field& f, const std::string& ref, const std::string& target, const std::string& what,
                 int in, bool streamed, std::string& out, const std::string& view) {
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
  if (streamed && f.progressive) {
    // $Lrpc.progressive: the handler gets the bytes where they are at once, and waits for each
    // part itself (lrpc::awaitArgument) while the client may still be writing the rest.
    out += I + view + " = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(" + src + "), " + ref + ".length);\n";
    return;
  }
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
    out += I + "if (::lrpc::Status s_ = call_.takeResultBytes(tail_, " + ref + ", " + target + "); !s_.isOk()) return s_;\n";
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

std::string tailArg(const Field& f, const std::string& what, std::string& out) {
  const std::string store = f.name + "Store_";
  const std::string view = f.name + "View_";
  if (!f.inPlace) out += "  " + valueType(f.type) + " " + store + ";\n";
  if (!f.inPlace && f.type.kind == Kind::kData) {
    out += "  const ::lrpc::detail::SpareBytes " + f.name + "Spare_(call_, " + store + ");  // a large copy's buffer, kept\n";
  }
  if (f.type.kind == Kind::kData) out += "  std::span<const uint8_t> " + view + ";\n";
  emitReadVar(f, "frame_." + f.name, store, what, 2, true, out, view);
  if (f.type.kind == Kind::kStruct) return store;
  if (f.type.kind == Kind::kText) return "std::string_view(" + store + ")";
  if (f.type.kind == Kind::kData) return view;
  const Type e = elemOf(f.type);  // a List
  if (e.kind == Kind::kBool) {
    // A std::vector<bool> holds no bools to point at: the span needs an array of its own.
    out += "  std::unique_ptr<bool[]> " + f.name + "Bools_ = std::make_unique<bool[]>(" + store + ".size());\n";
    out += "  for (size_t i_ = 0; i_ < " + store + ".size(); ++i_) " + f.name + "Bools_[i_] = " + store + "[i_];\n";
    return "std::span<const bool>(" + f.name + "Bools_.get(), " + store + ".size())";
  }
  if (e.kind == Kind::kText || e.kind == Kind::kData) {
    const std::string views = f.name + "Views_";
    out += "  const std::vector<" + elemParamType(e) + "> " + views + "(" + store + ".begin(), " + store + ".end());\n";
    return "std::span<const " + elemParamType(e) + ">(" + views + ")";
  }
  return "std::span<const " + memberType(e) + ">(" + store + ")";
}

void emitCodecPut(const Field& f, const std::string& I, std::string& out) {
  if (f.isVoid) return;
  const std::string off = std::to_string(f.offset);
  const std::string v = "v_." + f.member;
  if (f.type.kind == Kind::kBool) {
    out += I + "f_[" + off + "] = std::byte{static_cast<uint8_t>(" + v + " ? 1 : 0)};\n";
  } else if (f.type.kind == Kind::kInterface) {
    out += I + "::lrpc::codec::putCap(f_ + " + off + ", " + v + ", caps_);\n";
  } else if (isVariable(f.type)) {
    out += I + "end_ = ::lrpc::codec::putRef(t_, end_, f_ + " + off + ", " + v + ", caps_);\n";
  } else {
    out += I + "std::memcpy(f_ + " + off + ", &" + v + ", sizeof " + v + ");\n";
    emitZeroPadding("f_ + " + off, paddingInside(f.type), I, out);
  }
}

void emitCodecGet(const Field& f, const std::string& I, std::string& out) {
  if (f.isVoid) return;
  const std::string off = std::to_string(f.offset);
  const std::string v = "out_." + f.member;
  out += I + "if (n_ >= " + std::to_string(f.offset + f.size) + ") {\n";
  if (f.type.kind == Kind::kBool) {
    out += I + "  " + v + " = f_[" + off + "] != std::byte{0};\n";
  } else if (f.type.kind == Kind::kInterface) {
    out += I + "  if (!::lrpc::codec::getCap(r_, f_ + " + off + ", " + v + ")) return false;\n";
  } else if (isVariable(f.type)) {
    out += I + "  ::lrpc::VarRef ref;\n";
    out += I + "  std::memcpy(&ref, f_ + " + off + ", sizeof ref);\n";
    out += I + "  if (!::lrpc::codec::get(r_, ref, " + v + ")) return false;\n";
  } else {
    out += I + "  std::memcpy(&" + v + ", f_ + " + off + ", sizeof " + v + ");\n";
    emitBoolFix(v, boolsInside(f.type), static_cast<int>(I.size()) + 2, out);
  }
  out += I + "}\n";
}

}  // namespace lrpc::stubgen
