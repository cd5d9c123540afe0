// The straight-line copy code, shared by the client (arguments into a frame) and the server
// (results): fixed values at constant offsets, variable ones through one tail reservation. The
// order of the steps is here; each kind's own step is in value_code.cc.
#include "stubgen/emit_parts.h"

#include <algorithm>
#include <functional>

#include "stubgen/cpp_text.h"
#include "stubgen/emit_struct.h"
#include "stubgen/names.h"
#include "stubgen/type_rules.h"

namespace lrpc::stubgen {

// The Reader's nesting limit: $Lrpc.maxDepth, else the codec's default.
std::string depthArg(const Method& m) {
  return ", " + (m.maxDepth == 0 ? std::string("::lrpc::codec::kMaxDepth") : std::to_string(m.maxDepth) + "u") +
         ", &caps_";
}

bool anyCoded(const std::vector<Field>& fields) {
  return std::any_of(fields.begin(), fields.end(), [](const Field& f) { return f.type.coded; });
}

bool anyInterface(const std::vector<Field>& fields) {
  return std::any_of(fields.begin(), fields.end(), [](const Field& f) { return isCapability(f.type); });
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
    emitTailSize(f, v, spec, I, out);
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
      emitFramePut(f, valueOf(f), spec.capId, I, out);
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
      // A reserved tail is not zeroed (a large one would be written twice): the alignment
      // gap before each value is, so no stale byte of a reused buffer goes out.
      if (!end.empty()) {
        out += I + "if (" + at + " != " + end + ") std::memset(t_ + " + end + ", 0, " + at + " - (" + end + "));\n";
      }
      end = at + " + " + f.name + "Bytes_";
      emitTailPut(f, v, at, spec, I, out);
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
    for (uint32_t o : boolsInside(f.type)) out.push_back(f.offset + o);
  }
  return out;
}

}  // namespace lrpc::stubgen
