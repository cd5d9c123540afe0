// Where a declaration sits in its schema: its file, its doc comment, and the line a message
// about it names (searched in the source text, since capnp gives no line numbers).
#include "stubgen/model_parts.h"

#include <cstdlib>
#include <fstream>
#include <regex>

namespace lrpc::stubgen {

std::string ModelBuilder::docOf(uint64_t id) const {
  auto it = sourceInfo_.find(id);
  return it == sourceInfo_.end() ? std::string() : std::string(it->second.getDocComment());
}

std::string ModelBuilder::memberDoc(uint64_t id, unsigned index) const {
  auto it = sourceInfo_.find(id);
  if (it == sourceInfo_.end() || index >= it->second.getMembers().size()) return {};
  return it->second.getMembers()[index].getDocComment();
}

uint64_t ModelBuilder::fileIdOf(uint64_t id) const {
  // Method parameter structs have scopeId 0, so go by the display name's file part.
  std::string dn = node(id).getProto().getDisplayName();
  std::string file = dn.substr(0, dn.find(':'));
  for (auto n : request_.getNodes()) {
    if (n.isFile() && file == n.getDisplayName().cStr()) return n.getId();
  }
  return 0;
}

std::string ModelBuilder::fileOf(uint64_t id) const {
  std::string dn = node(id).getProto().getDisplayName();
  return dn.substr(0, dn.find(':'));
}

// The scopes from the file down to `id`, each by keyword and name ("struct Outer", "interface
// Inner"), so that a nested declaration's line is searched inside its own parents.
std::vector<ModelBuilder::Step> ModelBuilder::scopeSteps(uint64_t id) const {
  std::vector<Step> steps;
  for (uint64_t at = id; at != 0;) {
    auto n = node(at).getProto();
    if (n.isFile()) break;
    uint64_t parent = n.getScopeId();
    if (parent == 0) break;  // a method's parameter struct
    const char* kind = n.isStruct() ? "struct" : n.isInterface() ? "interface" : n.isEnum() ? "enum" : "";
    std::string name = n.getDisplayName().cStr() + n.getDisplayNamePrefixLength();
    if (*kind != '\0' && !(n.isStruct() && n.getStruct().getIsGroup())) steps.insert(steps.begin(), Step{kind, name});
    at = parent;
  }
  return steps;
}

// The interface a declaration is nested in (at any depth), or 0.
uint64_t ModelBuilder::enclosingInterface(uint64_t id) const {
  for (uint64_t at = node(id).getProto().getScopeId(); at != 0;) {
    auto n = node(at).getProto();
    if (n.isInterface()) return at;
    if (n.isFile()) return 0;
    at = n.getScopeId();
  }
  return 0;
}

// capnp 0.9's CodeGeneratorRequest carries no source positions, so the line of a declaration
// is found by reading the schema text. Display names are relative to where capnp runs, to its
// --src-prefix, or (imported files) to one of its import paths, so those are asked of capnp,
// the plugin's parent. A file that cannot be found gives no lines (messages then name no line).
const std::vector<std::string>& ModelBuilder::sourceLines(uint64_t fileId) const {
  auto cached = sourceLines_.find(fileId);
  if (cached != sourceLines_.end()) return cached->second;
  std::string file = node(fileId).getProto().getDisplayName();
  std::vector<std::string> candidates{file};
  if (!file.empty() && file[0] != '/') {
    const std::string parent = "/proc/" + std::to_string(getppid());
    auto rooted = [&](std::string dir) {
      if (!dir.empty() && dir[0] != '/') dir = parent + "/cwd/" + dir;
      candidates.push_back(dir + "/" + file);
    };
    candidates.push_back(parent + "/cwd/" + file);
    std::ifstream cmdline(parent + "/cmdline", std::ios::binary);
    std::vector<std::string> args;
    for (std::string arg; std::getline(cmdline, arg, '\0');) args.push_back(arg);
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (a.rfind("--src-prefix=", 0) == 0) rooted(a.substr(13));
      if (a.rfind("--import-path=", 0) == 0) rooted(a.substr(14));
      if (a.rfind("-I", 0) == 0) {
        if (a.size() > 2) rooted(a.substr(2));
        else if (i + 1 < args.size()) rooted(args[i + 1]);
      }
    }
    if (const char* dir = std::getenv("LRPC_SCHEMA_DIR")) candidates.push_back(std::string(dir) + "/" + file);
  }
  std::vector<std::string> lines;
  for (const auto& c : candidates) {
    std::ifstream in(c);
    if (!in) continue;
    for (std::string line; std::getline(in, line);) {
      if (size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
      lines.push_back(line);
    }
    break;
  }
  return sourceLines_.emplace(fileId, std::move(lines)).first->second;
}

// Each step is searched from where the previous one was found (a member by its name and
// ordinal, which is unique in its scope). A step that is not found keeps the previous line.
int ModelBuilder::lineOf(uint64_t fileId, const std::vector<Step>& path) const {
  if (fileId == 0) return 0;
  const auto& lines = sourceLines(fileId);
  if (lines.empty()) return 0;
  size_t at = 0;
  bool any = false;
  for (const auto& step : path) {
    std::string pattern;
    const std::string ord = step.ordinal >= 0 ? "\\s*@\\s*" + std::to_string(step.ordinal) + "\\b" : "";
    if (step.kind == "interface" || step.kind == "struct" || step.kind == "enum") {
      pattern = "\\b" + step.kind + "\\s+" + step.name + "\\b";
    } else if (step.kind == "method") {
      pattern = "\\b" + step.name + ord;
    } else if (step.kind == "field") {  // "name @3 :T", or a group / union "name :group"
      pattern = "\\b" + step.name + (step.ordinal >= 0 ? ord : "\\s*:\\s*(group|union)\\b");
    } else {  // param / result
      pattern = "\\b" + step.name + "\\s*:";
    }
    std::regex re(pattern);
    size_t from = at;
    if (step.kind == "result") {  // results follow the method's "->"
      while (from < lines.size() && lines[from].find("->") == std::string::npos) ++from;
      if (from == lines.size()) from = at;
    }
    for (size_t i = from; i < lines.size(); ++i) {
      std::string text = lines[i];
      if (i == from && step.kind == "result" && text.find("->") != std::string::npos) text = text.substr(text.find("->"));
      if (std::regex_search(text, re)) {
        at = i;
        any = true;
        break;
      }
    }
  }
  return any ? static_cast<int>(at) + 1 : 0;
}

Diag ModelBuilder::diag(uint64_t fileId, int line, const std::string& text) const {
  return Diag{fileId ? std::string(node(fileId).getProto().getDisplayName()) : std::string("?"), line, text};
}
}  // namespace lrpc::stubgen
