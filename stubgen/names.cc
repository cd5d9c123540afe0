#include "stubgen/names.h"

#include <cctype>
#include <cstdio>
#include <set>

namespace lrpc::stubgen {
namespace {

// C++20 keywords and alternative tokens: a schema name spelled like one gets a trailing '_'.
bool isKeyword(std::string_view s) {
  static const std::set<std::string_view> kKeywords = {
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
      "case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept",
      "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await",
      "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast",
      "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto",
      "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
      "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
      "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
      "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local",
      "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
      "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq",
      // Macros from the headers generated code includes.
      "NULL", "assert", "errno", "offsetof", "stdin", "stdout", "stderr",
  };
  return kKeywords.count(s) != 0;
}

}  // namespace

std::string cppIdent(std::string_view name) {
  std::string out(name);
  // Identifiers with a double underscore or "_Upper" are reserved to the implementation.
  if (isKeyword(name) || out.find("__") != std::string::npos ||
      (out.size() > 1 && out[0] == '_' && std::isupper(static_cast<unsigned char>(out[1])))) {
    out += '_';
  }
  return out;
}

std::string pascal(std::string_view name) {
  std::string out(name);
  if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out;
}

std::string qualifiedNamespace(std::string_view ns) {
  if (ns.empty()) return {};
  if (ns.substr(0, 2) == "::") return std::string(ns);
  return "::" + std::string(ns);
}

std::string docLines(std::string_view doc, int indent) {
  std::string out;
  while (!doc.empty() && (doc.back() == '\n' || doc.back() == ' ')) doc.remove_suffix(1);
  if (doc.empty()) return out;
  size_t pos = 0;
  while (pos <= doc.size()) {
    size_t end = doc.find('\n', pos);
    if (end == std::string_view::npos) end = doc.size();
    std::string_view line = doc.substr(pos, end - pos);
    out.append(static_cast<size_t>(indent), ' ');
    out += line.empty() ? "//" : "// ";
    out += line;
    out += '\n';
    pos = end + 1;
  }
  return out;
}

uint64_t fnv1a64(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string hex64(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016llxull", static_cast<unsigned long long>(v));
  return buf;
}

std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

}  // namespace lrpc::stubgen
