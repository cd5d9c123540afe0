// The order of declarations in a generated header: C++ needs a member's type complete before
// the struct that holds it, and an interface's frames before the interface.
#include "stubgen/model_parts.h"

#include <algorithm>
#include <functional>

namespace lrpc::stubgen {
namespace {

// Struct ids a struct's fields (and its nested structs' fields) refer to.
void completeDeps(const InterfaceDecl& d, std::set<uint64_t>& deps);

// (By value only: a List's element may be incomplete where the std::vector member is declared.)
void structDeps(const StructDecl& s, std::set<uint64_t>& out) {
  for (const auto& n : s.nestedInterfaces) completeDeps(n, out);
  if (s.genericId != 0) out.insert(s.genericId);  // a specialization follows its template
  for (const auto& f : s.fields) {
    if (uint64_t id = memberNeeds(f.type)) out.insert(id);
  }
  for (const auto& n : s.nestedStructs) structDeps(n, out);
}

// Whether `d` is, or declares inside it, the type `id` (StructDecl and InterfaceDecl alike).
template <class Decl>
bool declares(const Decl& d, uint64_t id) {
  if (d.id == id) return true;
  for (const auto& e : d.nestedEnums) {
    if (e.id == id) return true;
  }
  for (const auto& n : d.nestedStructs) {
    if (declares(n, id)) return true;
  }
  for (const auto& n : d.nestedInterfaces) {
    if (declares(n, id)) return true;
  }
  return false;
}

// The types and bases an interface's struct names: its own methods' and, since their structs
// sit inside it, its nested interfaces'.
void interfaceDeps(const InterfaceDecl& d, std::set<uint64_t>& deps) {
  deps.insert(d.bases.begin(), d.bases.end());
  for (size_t m = d.ownBegin; m < d.methods.size(); ++m) {
    for (const auto* fields : {&d.methods[m].params, &d.methods[m].results}) {
      for (const auto& f : *fields) {
        if (f.type.id) deps.insert(f.type.id);
        if (f.type.elemId) deps.insert(f.type.elemId);
      }
    }
  }
  for (const auto& n : d.nestedInterfaces) interfaceDeps(n, deps);
}

// What an interface's struct needs complete: its bases, enums anywhere in its frames, structs its
// frames hold by value (flattened ones) and those its several-result structs hold; the same
// for the structs and interfaces nested in it.
void completeDeps(const InterfaceDecl& d, std::set<uint64_t>& deps) {
  deps.insert(d.bases.begin(), d.bases.end());
  for (size_t i = d.ownBegin; i < d.methods.size(); ++i) {
    const Method& m = d.methods[i];
    for (const auto* fields : {&m.params, &m.results}) {
      for (const auto& f : *fields) frameNeeds(f.type, fields == &m.results && m.results.size() > 1, deps);
    }
  }
  for (const auto& s : d.nestedStructs) structDeps(s, deps);
  for (const auto& n : d.nestedInterfaces) completeDeps(n, deps);
}

// Items 0..n-1 in an order where each comes after every other item that declares an id it
// depends on (depsOf(i, ids) collects them, declaresId(j, id) tells): a depth-first walk. An
// edge that closes a cycle is passed over, after onCycle(first, last) has been given the
// items on that cycle (the walk's stack from the item it returns to).
template <class DepsOf, class DeclaresId, class OnCycle>
std::vector<size_t> orderByDeps(size_t n, DepsOf depsOf, DeclaresId declaresId, OnCycle onCycle) {
  std::vector<size_t> out;
  std::vector<int> state(n, 0);  // 0 new, 1 on the walk's stack, 2 placed
  std::vector<size_t> stack;
  std::function<void(size_t)> visit = [&](size_t i) {
    if (state[i] == 2) return;
    if (state[i] == 1) {
      onCycle(std::find(stack.begin(), stack.end(), i), stack.end());
      return;
    }
    state[i] = 1;
    stack.push_back(i);
    std::set<uint64_t> deps;
    depsOf(i, deps);
    for (uint64_t dep : deps) {
      for (size_t j = 0; j < n; ++j) {
        if (j != i && declaresId(j, dep)) visit(j);
      }
    }
    stack.pop_back();
    state[i] = 2;
    out.push_back(i);
  };
  for (size_t i = 0; i < n; ++i) visit(i);
  return out;
}

// Siblings of one kind, each after those it needs (`deps` of one collects the ids).
template <class Decl>
std::vector<Decl> siblingOrder(const std::vector<Decl>& in, void (*deps)(const Decl&, std::set<uint64_t>&)) {
  std::vector<Decl> out;
  const auto order = orderByDeps(
      in.size(), [&](size_t i, std::set<uint64_t>& ids) { deps(in[i], ids); },
      [&](size_t j, uint64_t id) { return declares(in[j], id); }, [](auto, auto) {});
  for (size_t i : order) out.push_back(in[i]);
  return out;
}

}  // namespace

// C++ needs a struct's member types complete first: order siblings by their dependencies.
std::vector<StructDecl> dependencyOrder(std::vector<StructDecl> in) { return siblingOrder(in, structDeps); }

// An interface's stubs name its bases' frames and the types its own methods use: when those
// are declared in (or are) another interface of the same file, that one must come first.
std::vector<InterfaceDecl> dependencyOrder(std::vector<InterfaceDecl> in) { return siblingOrder(in, interfaceDeps); }

// One order for a file's top-level structs and interfaces, each after what it needs complete
// (a struct may hold a type nested in an interface, an interface's frames a struct). Interfaces
// on a cycle of such needs cannot be laid out in C++: they are returned in `cyclic`.
std::vector<std::pair<bool, size_t>> topLevelOrder(const std::vector<StructDecl>& structs,
                                                   const std::vector<InterfaceDecl>& interfaces,
                                                   std::set<size_t>& cyclic) {
  std::vector<std::pair<bool, size_t>> items, out;
  for (size_t i = 0; i < structs.size(); ++i) items.emplace_back(false, i);
  for (size_t i = 0; i < interfaces.size(); ++i) items.emplace_back(true, i);
  const auto order = orderByDeps(
      items.size(),
      [&](size_t i, std::set<uint64_t>& deps) {
        if (items[i].first) {
          completeDeps(interfaces[items[i].second], deps);
        } else {
          structDeps(structs[items[i].second], deps);
        }
      },
      [&](size_t j, uint64_t id) {
        return items[j].first ? declares(interfaces[items[j].second], id) : declares(structs[items[j].second], id);
      },
      [&](auto first, auto last) {  // every interface on the cycle
        for (; first != last; ++first) {
          if (items[*first].first) cyclic.insert(items[*first].second);
        }
      });
  for (size_t i : order) out.push_back(items[i]);
  return out;
}

}  // namespace lrpc::stubgen
