// What the parts of ModelBuilder share (model.cc lists them): short names for capnp's schema
// types and the small readers of a schema node. Internal to the generator.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <capnp/schema.capnp.h>

#include "stubgen/kinds.h"
#include "stubgen/model.h"
#include "stubgen/type_rules.h"
#include "stubgen/names.h"

namespace lrpc::stubgen {

using capnp::schema::Node;
namespace schema = capnp::schema;

inline uint32_t alignUp(uint32_t n, uint32_t a) { return (n + a - 1) / a * a; }

// "dir/calc.capnp" -> "calc".
std::string baseNameOf(const std::string& displayName);
// "dir/calc.capnp:Calc.Op" -> "Calc.Op".
std::string localPath(Node::Reader n);
bool hasAnnotation(capnp::List<schema::Annotation>::Reader anns, uint64_t id);
bool getUInt32Annotation(capnp::List<schema::Annotation>::Reader anns, uint64_t id, uint32_t& out);
// Fields in declaration order (capnp lists them by ordinal); `indexes` (if given) gets each
// one's index in capnp's list.
std::vector<schema::Field::Reader> fieldsInCodeOrder(Node::Reader n, std::vector<unsigned>* indexes);

// declaration_order.cc: C++ needs a struct's member types complete first, so siblings are
// ordered by their dependencies; and one order for a file's top-level structs (first: false)
// and interfaces (true), by index, with the interfaces on a cycle of such needs in `cyclic`.
std::vector<StructDecl> dependencyOrder(std::vector<StructDecl> in);
std::vector<InterfaceDecl> dependencyOrder(std::vector<InterfaceDecl> in);
std::vector<std::pair<bool, size_t>> topLevelOrder(const std::vector<StructDecl>& structs,
                                                   const std::vector<InterfaceDecl>& interfaces,
                                                   std::set<size_t>& cyclic);

template <class Decl>
Decl ModelBuilder::named(uint64_t id) const {
  auto n = node(id).getProto();
  Decl d;
  d.id = id;
  d.name = cppIdent(n.getDisplayName().cStr() + n.getDisplayNamePrefixLength());
  d.cppName = cppNameOf(id);
  return d;
}

}  // namespace lrpc::stubgen
