#include "stubgen/cpp_text.h"

namespace lrpc::stubgen {

std::string ind(int n) { return std::string(static_cast<size_t>(n), ' '); }

std::string offsetList(const std::vector<uint32_t>& offsets) {
  std::string s = "{";
  for (size_t i = 0; i < offsets.size(); ++i) s += (i ? ", " : "") + std::to_string(offsets[i]) + "u";
  return s + "}";
}

void emitZeroPadding(const std::string& base, const std::vector<std::pair<uint32_t, uint32_t>>& padding,
                     const std::string& I, std::string& out) {
  for (auto [o, n] : padding) {
    out += I + "std::memset(" + base + " + " + std::to_string(o) + ", 0, " + std::to_string(n) + ");\n";
  }
}

void emitBoolFix(const std::string& object, const std::vector<uint32_t>& offsets, int in, std::string& out) {
  if (offsets.empty()) return;
  const std::string I = ind(in);
  out += I + "for (uint32_t o_ : std::initializer_list<uint32_t>" + offsetList(offsets) + ") {\n";
  out += I + "  unsigned char* b_ = reinterpret_cast<unsigned char*>(&" + object + ") + o_;\n";
  out += I + "  *b_ = *b_ != 0 ? 1 : 0;\n";
  out += I + "}\n";
}

}  // namespace lrpc::stubgen
