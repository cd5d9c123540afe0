// The straight-line copy code, shared by the client (arguments into a frame) and the server
// (results): fixed values by memcpy at constant offsets, variable ones through the tail.
#include "stubgen/emit_parts.h"

#include <algorithm>
#include <functional>
#include <set>

#include "stubgen/cpp_text.h"
#include "stubgen/emit_struct.h"
#include "stubgen/names.h"

namespace lrpc::stubgen {
namespace {

std::string elemSize(const Type& list) { return "sizeof(" + frameType(elemOf(list)) + ")"; }

}  // namespace

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

}  // namespace lrpc::stubgen
