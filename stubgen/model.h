// The generator's model: a requested schema file turned into plain structs (enums, fixed-size
// structs, interfaces with flattened procedure lists) with every frame size, offset and
// alignment already computed. emit.cc only formats this model; all decisions (what is
// supported, how frames are laid out) are made here, so they can be read in one place.
#pragma once

#include <capnp/schema-loader.h>
#include <capnp/schema.capnp.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace lrpc::stubgen {

// The annotations of idl/lrpc.capnp and c++.capnp that the generator reads.
inline constexpr uint64_t kCxxNamespaceId = 0xb9c6f99ebf805f2cull;
inline constexpr uint64_t kAstacksId = 0xc63cec861534f680ull;
inline constexpr uint64_t kAstackBytesId = 0xc8c88bdaef2152a0ull;
inline constexpr uint64_t kMaxBytesId = 0xd54e77b422219b17ull;
inline constexpr uint64_t kInPlaceId = 0xd9d8806d032a08e7ull;

inline constexpr uint32_t kDefaultAstacks = 5;
inline constexpr uint32_t kDefaultAstackBytes = 1500;  // the Ethernet payload

enum class Kind {
  kBool, kInt8, kInt16, kInt32, kInt64, kUInt8, kUInt16, kUInt32, kUInt64,
  kFloat32, kFloat64, kEnum, kStruct, kText, kData, kList,
};

// A supported type. For kList, `elem` and `elemId` describe the element (one level only:
// List(List(..)) is rejected).
struct Type {
  Kind kind = Kind::kInt32;
  uint64_t id = 0;  // kEnum / kStruct: the node id
  Kind elem = Kind::kInt32;
  uint64_t elemId = 0;
  std::string cppName;  // kEnum / kStruct (kList: of the element): fully qualified C++ name
  // kStruct (kList: of struct elements): offsets of every Bool inside one value, nested
  // structs included. Readers force those bytes to 0/1 before the value is used as C++ bools.
  std::vector<uint32_t> boolOffsets;
};

// One member of a generated plain struct, or one parameter / result of a method.
struct Field {
  std::string name;       // C++ identifier (keyword-escaped)
  std::string schemaName; // as written in the schema
  Type type;
  uint32_t offset = 0;    // in the struct or frame
  uint32_t size = 0;      // of its slot in the struct or frame
  uint32_t maxBytes = 0;  // $Lrpc.maxBytes, 0 = none (then the tail's bound applies)
  bool inPlace = false;   // $Lrpc.inPlace: the server reads this Data argument without copy "E"
  std::string doc;
};

struct EnumDecl {
  uint64_t id = 0;
  std::string name;     // local C++ name
  std::string cppName;  // fully qualified ("::ns::Outer::Op")
  std::vector<std::pair<std::string, std::string>> enumerants;  // C++ name, doc
  std::string doc;
};

struct StructDecl {
  uint64_t id = 0;
  std::string name;
  std::string cppName;
  std::vector<Field> fields;
  uint32_t size = 0;
  uint32_t align = 1;
  std::vector<EnumDecl> nestedEnums;
  std::vector<StructDecl> nestedStructs;  // in dependency order
  std::string doc;
};

// A procedure, as it appears in one interface's flattened PDL.
struct Method {
  std::string name;          // C++ identifier
  std::string schemaName;
  std::string constName;     // kProcIndex constant, "kAdd"
  std::string frameScope;    // cppName of the interface that declares it (owns the frames)
  std::string framePrefix;   // "Add": AddArgsFrame, AddResultsFrame, AddResults
  std::string qualifiedName; // "Calc.add", for error messages at run time
  uint16_t ordinal = 0;
  uint32_t index = 0;        // in the PDL of the interface being emitted
  std::vector<Field> params;
  std::vector<Field> results;
  uint32_t argsSize = 0;
  uint32_t argsAlign = 1;
  uint32_t resultsSize = 0;
  uint32_t resultsAlign = 1;
  uint32_t astackCount = kDefaultAstacks;
  uint32_t astackBytes = 0;
  bool variable = false;
  std::string doc;
  bool inherited = false;
};

struct InterfaceDecl {
  uint64_t id = 0;
  std::string name;
  std::string cppName;
  std::string descriptorName;  // "calc.capnp:Calc"
  std::vector<Method> methods; // flattened PDL: bases first, depth-first, then its own
  size_t ownBegin = 0;         // methods[ownBegin..] are declared here (frames emitted here)
  uint64_t signatureHash = 0;
  std::vector<uint64_t> bases;  // direct superclasses
  std::vector<EnumDecl> nestedEnums;
  std::vector<StructDecl> nestedStructs;
  std::string doc;
};

struct FileModel {
  std::string sourceName;  // the schema's display name ("calc.capnp")
  std::string baseName;    // "calc": outputs are calc.lrpc.h / calc.lrpc.cc
  std::string cppNamespace;  // "a::b" or empty
  std::string doc;
  std::vector<std::string> includes;  // "other.lrpc.h", for imported schemas we use
  std::vector<EnumDecl> enums;
  std::vector<StructDecl> structs;  // dependency order
  std::vector<InterfaceDecl> interfaces;
};

// Builds the model of one requested file. Every unsupported construct adds one message
// ("calc.capnp:12: interface Calc, method get, result value: AnyPointer is not supported
// (...)") to `errors`; the model is only usable when `errors` stays empty.
class ModelBuilder {
 public:
  ModelBuilder(const capnp::SchemaLoader& loader, capnp::schema::CodeGeneratorRequest::Reader request);

  FileModel build(uint64_t fileId, std::vector<std::string>& errors);

 private:
  struct Layout {
    uint32_t size = 0;
    uint32_t align = 1;
  };
  struct Context;  // where a type is used, for messages

  capnp::Schema node(uint64_t id) const;
  std::string docOf(uint64_t id) const;
  std::string memberDoc(uint64_t id, unsigned index) const;
  std::string cppNameOf(uint64_t id) const;
  std::string fileOf(uint64_t id) const;
  uint64_t fileIdOf(uint64_t id) const;
  int lineOf(uint64_t fileId, const std::vector<std::pair<std::string, std::string>>& path) const;

  bool convertType(capnp::schema::Type::Reader t, bool inStruct, const std::string& where,
                   uint64_t fileId, int line, Type& out, std::vector<std::string>& errors);
  Layout layoutOf(const Type& t) const;
  void boolOffsets(uint64_t structId, uint32_t base, std::vector<uint32_t>& out);
  bool checkStruct(uint64_t id, std::vector<std::string>& errors);
  void collectScope(uint64_t scopeId, std::vector<EnumDecl>& enums, std::vector<StructDecl>& structs,
                    std::vector<InterfaceDecl>* interfaces, std::vector<std::string>& errors);
  EnumDecl makeEnum(uint64_t id);
  StructDecl makeStruct(uint64_t id, std::vector<std::string>& errors);
  InterfaceDecl makeInterface(uint64_t id, std::vector<std::string>& errors);
  void addMethods(uint64_t ifaceId, std::set<uint64_t>& seen, std::vector<Method>& out,
                  std::vector<std::string>& errors);
  bool makeFields(uint64_t structId, const std::string& ifaceName, const std::string& methodName,
                  const char* role, uint64_t fileId, int methodLine, std::vector<Field>& out,
                  std::vector<std::string>& errors);
  std::string canonicalType(const Type& t) const;
  void noteUse(const Type& t);

  const capnp::SchemaLoader& loader_;
  capnp::schema::CodeGeneratorRequest::Reader request_;
  std::map<uint64_t, capnp::schema::Node::SourceInfo::Reader> sourceInfo_;
  std::map<uint64_t, Layout> layouts_;       // struct id -> layout, once computed
  std::set<uint64_t> inProgress_;            // structs being laid out (cycle check)
  std::map<uint64_t, bool> structOk_;        // struct id -> passed checks
  std::string rootInterface_;               // the interface whose PDL is being flattened
  uint64_t rootId_ = 0;
  std::vector<uint64_t> rootBases_;
  std::set<uint64_t> usedFiles_;             // files whose types the requested file uses
  mutable std::map<std::string, std::vector<std::string>> sourceLines_;  // file -> lines
};

}  // namespace lrpc::stubgen
