// The generator's model: a requested schema file turned into plain structs (enums, fixed-size
// structs, interfaces with flattened procedure lists) with every frame size, offset and
// alignment already computed. emit.cc only formats this model; all decisions (what is
// supported, how frames are laid out) are made here, so they can be read in one place.
#pragma once

#include <capnp/schema-loader.h>
#include <capnp/schema.capnp.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace lrpc::stubgen {

// The annotations of idl/lrpc.capnp and c++.capnp that the generator reads.
inline constexpr uint64_t kCxxNamespaceId = 0xb9c6f99ebf805f2cull;
inline constexpr uint64_t kAstacksId = 0xc63cec861534f680ull;
inline constexpr uint64_t kAstackBytesId = 0xc8c88bdaef2152a0ull;
inline constexpr uint64_t kMaxBytesId = 0xd54e77b422219b17ull;
inline constexpr uint64_t kInPlaceId = 0xd9d8806d032a08e7ull;
inline constexpr uint64_t kProgressiveId = 0x85abbd5a001840aeull;
inline constexpr uint64_t kMaxDepthId = 0xf7c1fa92522000dfull;
inline constexpr uint64_t kViewsId = 0xe3a1c5d7b9f20468ull;
inline constexpr uint64_t kDeferredId = 0xb4f1e3c2a9d87651ull;

inline constexpr uint64_t kStreamResultId = 0x995f9a3377c0b16eull;  // capnp/stream.capnp

inline constexpr uint32_t kDefaultAstacks = 5;
inline constexpr uint32_t kDefaultAstackBytes = 1500;  // the Ethernet payload

// The scalar kinds come first, each with its row in kinds.h (in this order).
enum class Kind {
  kBool, kInt8, kInt16, kInt32, kInt64, kUInt8, kUInt16, kUInt32, kUInt64,
  kFloat32, kFloat64, kEnum, kStruct, kText, kData, kList,
  kInterface,  // a capability: a uint32 id in the frame (runtime/capability.h)
};

// A supported type. For kList, `elem` and `elemId` describe the element, and `elemType` is
// the whole element type (a List of Lists nests).
struct Type {
  Kind kind = Kind::kInt32;
  uint64_t id = 0;  // kEnum / kStruct / kInterface: the node id
  Kind elem = Kind::kInt32;
  uint64_t elemId = 0;
  std::string cppName;  // kEnum / kStruct (kList: of the element): fully qualified C++ name
  // Written and read through runtime/codec.h: a struct with Text, Data, List or struct fields
  // of that kind, a union or a group (named by a VarRef, not flattened into the frame), or a
  // List whose elements are Lists or such structs.
  bool coded = false;
  // kStruct: a struct field whose struct can contain the field's struct again (Foo.b :Bar,
  // Bar.f :Foo): held through lrpc::Box (runtime/codec.h), nullable, as capnp's pointers are.
  bool boxed = false;
  std::shared_ptr<const Type> elemType;  // kList: the element
  // kStruct (kList: of struct elements): offsets of every Bool inside one value, nested
  // structs included. Readers force those bytes to 0/1 before the value is used as C++ bools.
  std::vector<uint32_t> boolOffsets;
  // kStruct (kList: of struct elements): every padding byte range {offset, length} inside one
  // value, nested structs included. Writers zero them, so no stale byte of the sender's
  // memory reaches the peer.
  std::vector<std::pair<uint32_t, uint32_t>> padding;
};

// One member of a generated plain struct, or one parameter / result of a method.
struct Field {
  std::string name;       // C++ identifier (keyword-escaped)
  std::string schemaName; // as written in the schema
  Type type;
  // In a coded struct: the C++ member that holds it ("name", or "name_" for a union member)
  // and whether it is a union member (its discriminant), a Void union member, or a group.
  std::string member;
  int discriminant = -1;
  bool isVoid = false;
  bool group = false;
  uint32_t offset = 0;    // in the struct or frame (a coded struct: in its fixed part)
  uint32_t size = 0;      // of its slot in the struct or frame
  uint32_t maxBytes = 0;  // $Lrpc.maxBytes, 0 = none (then the tail's bound applies)
  bool inPlace = false;   // $Lrpc.inPlace: the server reads this Data argument without copy "E"
  bool progressive = false;  // $Lrpc.progressive: the handler gets it before all of it is written
  // The schema's default as a C++ expression ("3", "::ns::Color::kRed", "\"abc\""), or empty.
  // Struct fields: the member initializer; parameters: the client's default argument (trailing
  // ones only; see idl/README.md).
  std::string defaultValue;
  std::string doc;
};

// One refused construct: where it is declared and why. Printed as
// "file:line: Decl.path: what is refused (what to do instead)"; line 0 when unknown.
struct Diag {
  std::string file;
  int line = 0;
  std::string text;  // "Person.emails: Text is not allowed in a struct (...)"

  std::string str() const {
    // Appended piece by piece: g++ 12 -O3 warns falsely (-Wrestrict) on literal + string.
    std::string s = file;
    if (line > 0) s.append(":").append(std::to_string(line));
    return s.append(": ").append(text);
  }
  bool operator<(const Diag& o) const {
    if (file != o.file) return file < o.file;
    if (line != o.line) return line < o.line;
    return text < o.text;
  }
  bool operator==(const Diag& o) const { return file == o.file && line == o.line && text == o.text; }
};

// Sorted by file and line, each construct once (a struct used by many methods is one line).
void sortUnique(std::vector<Diag>& diags);

struct EnumDecl {
  uint64_t id = 0;
  std::string name;     // local C++ name
  std::string cppName;  // fully qualified ("::ns::Outer::Op")
  std::vector<std::pair<std::string, std::string>> enumerants;  // C++ name, doc
  std::string doc;
};

struct InterfaceDecl;

struct StructDecl {
  uint64_t id = 0;
  std::string name;
  std::string cppName;
  std::vector<Field> fields;
  uint32_t size = 0;   // coded: of its fixed part in a frame (a multiple of 8)
  uint32_t align = 1;
  bool coded = false;  // see Type::coded
  // With an unnamed union: where its discriminant sits in the fixed part (uint16_t).
  bool hasUnion = false;
  uint32_t discriminantOffset = 0;
  // A generic struct (Box(T)): its parameter names; it is declared as a C++ class template and
  // each use with concrete types (Box(Text)) is a struct of its own, an explicit specialization
  // (Box<std::string>) with `genericId` the template's node and `templateArgs` "<std::string>".
  std::vector<std::string> templateParams;
  uint64_t genericId = 0;
  std::string templateArgs;
  // Fixed-size structs: Bool offsets and padding, for lrpcFixBools / lrpcScrub.
  std::vector<uint32_t> boolOffsets;
  std::vector<std::pair<uint32_t, uint32_t>> padding;
  std::vector<EnumDecl> nestedEnums;
  std::vector<StructDecl> nestedStructs;  // in dependency order
  std::vector<InterfaceDecl> nestedInterfaces;  // emitted inside it, like an interface's
  std::string doc;
  // Not empty: the struct uses a refused construct and is not generated (only its nested types
  // are, inside an empty shell); this says why, for a comment in the header.
  std::string refused;
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
  uint32_t maxDepth = 0;     // $Lrpc.maxDepth; 0: lrpc::codec::kMaxDepth
  bool variable = false;
  bool stream = false;       // declared `-> stream`: no results
  bool views = false;        // $Lrpc.views: arguments are views (runtime/codec_view.h)
  bool deferred = false;     // $Lrpc.deferred: the handler answers through an lrpc::Reply (runtime/pending.h)
  std::string doc;
  bool inherited = false;
};

struct InterfaceDecl {
  uint64_t id = 0;
  std::string name;
  std::string relName;  // inside the file's namespace: "Calc", or "Outer::Inner" when nested
  std::string cppName;
  std::string descriptorName;  // "calc.capnp:Calc"
  std::vector<Method> methods; // flattened PDL: bases first, depth-first, then its own
  // A method passes or returns a capability: the PDL gets the tunnel procedure after
  // `methods` (runtime/capability.h), and the descriptor says so.
  bool carriesCaps = false;
  size_t ownBegin = 0;         // methods[ownBegin..] are declared here (frames emitted here)
  uint64_t signatureHash = 0;
  std::vector<uint64_t> bases;  // direct superclasses
  // The first-base chain (first base, its first base, ...): each one's PDL opens this one's, so
  // a Client of this interface converts to theirs (InterfaceDescriptor::prefixBases).
  std::vector<std::pair<uint64_t, std::string>> prefixBases;  // id, C++ name
  // Every other interface it extends, directly or through a base (a second base, and that
  // base's own bases): their methods sit further into this PDL, so a Client converts to theirs
  // through an in-process adaptor that forwards each of their methods (emitted per base).
  struct OtherBase {
    uint64_t id = 0;
    std::string cppName;
    std::set<std::string> scopes;  // the C++ names of the base and of everything it extends
  };
  std::vector<OtherBase> otherBases;
  std::vector<EnumDecl> nestedEnums;
  std::vector<StructDecl> nestedStructs;
  std::vector<InterfaceDecl> nestedInterfaces;  // declared inside it, emitted inside its struct
  std::string doc;
  std::string file;  // the schema that declares it, and the line of its declaration
  int line = 0;
  // Everything refused in what its methods reach (their types, its bases). Not empty: the
  // interface cannot be generated (strict: an error; LRPC_SKIP_UNSUPPORTED: left out).
  std::vector<Diag> refusals;
};

struct FileModel {
  std::string sourceName;  // the schema's display name ("calc.capnp")
  std::string baseName;    // "calc": outputs are calc.lrpc.h / calc.lrpc.cc
  std::string cppNamespace;  // "a::b" or empty
  std::string doc;
  std::vector<std::string> includes;  // "other.lrpc.h", for imported schemas we use
  std::vector<EnumDecl> enums;
  std::vector<StructDecl> structs;  // dependency order
  std::vector<InterfaceDecl> interfaces;  // refused ones included (see InterfaceDecl::refusals)
  // The order to declare them in: {false, i} is structs[i], {true, i} is interfaces[i].
  std::vector<std::pair<bool, size_t>> order;
};

// Every interface of the file at any depth (inside interfaces and structs), parents first.
void forEachInterface(const FileModel& file, const std::function<void(const InterfaceDecl&)>& fn);
// Every struct of the file at any depth (inside structs and interfaces), nested ones first.
void forEachStruct(const FileModel& file, const std::function<void(const StructDecl&)>& fn);

// Builds the model of one requested file. Only what an interface's methods reach is checked:
// every refused construct an interface needs lands in its `refusals` ("calc.capnp:12:
// Calc.get -> value: AnyPointer is not supported (...)"); a struct no method uses and that
// cannot be generated is left out with a comment, never an error.
class ModelBuilder {
 public:
  ModelBuilder(const capnp::SchemaLoader& loader, capnp::schema::CodeGeneratorRequest::Reader request);

  FileModel build(uint64_t fileId);

 private:
  struct Layout {
    uint32_t size = 0;
    uint32_t align = 1;
  };
  // One step of a declaration's place in its file, to find its line: a scope ("struct",
  // "interface", "enum") by name, a "field" or "method" by name and ordinal (-1: a group or
  // union, which has none), or a method's "param" / "result" by name.
  struct Step {
    std::string kind;
    std::string name;
    int ordinal = -1;
  };

  // A generic struct used with concrete type arguments: a struct of its own, named by a small
  // synthetic id (real capnp ids have their top bit set), whose fields see `args`.
  struct Instance {
    uint64_t genericId = 0;
    std::vector<Type> args;
  };
  // While an instance's fields are converted, its type parameters stand for its arguments.
  class Bind {
   public:
    Bind(ModelBuilder& b, uint64_t id);
    ~Bind();
    Bind(const Bind&) = delete;
    Bind& operator=(const Bind&) = delete;

   private:
    ModelBuilder& b_;
    uint64_t scope_ = 0;
    bool had_ = false;
    std::vector<Type> saved_;
  };

  capnp::Schema node(uint64_t id) const;  // an instance: its generic struct's node
  bool instantiate(capnp::schema::Type::Struct::Reader st, const std::string& path, uint64_t fileId, int line,
                   uint64_t& id, std::vector<Diag>& diags);
  std::string docOf(uint64_t id) const;
  std::string memberDoc(uint64_t id, unsigned index) const;
  std::string cppNameOf(uint64_t id) const;
  // A declaration of any kind with its id and names set, as each make*() starts (model_parts.h).
  template <class Decl>
  Decl named(uint64_t id) const;
  std::string fileOf(uint64_t id) const;
  uint64_t fileIdOf(uint64_t id) const;
  std::vector<Step> scopeSteps(uint64_t id) const;
  uint64_t enclosingInterface(uint64_t id) const;
  const std::vector<std::string>& sourceLines(uint64_t fileId) const;
  int lineOf(uint64_t fileId, const std::vector<Step>& path) const;
  Diag diag(uint64_t fileId, int line, const std::string& text) const;

  bool convertType(capnp::schema::Type::Reader t, bool inStruct, const std::string& path, uint64_t fileId,
                   int line, Type& out, std::vector<Diag>& diags);
  Layout layoutOf(const Type& t) const;
  std::vector<std::pair<Type, uint32_t>> membersAt(uint64_t structId);
  void boolOffsets(uint64_t structId, uint32_t base, std::vector<uint32_t>& out);
  void paddingOf(uint64_t structId, uint32_t base, std::vector<std::pair<uint32_t, uint32_t>>& out);
  bool checkStruct(uint64_t id, std::vector<Diag>& diags);
  // Whether struct field `f` of struct (or group) `ownerId` is held through a Box: its struct
  // reaches the owner's struct again through struct fields held by value.
  bool boxedField(uint64_t ownerId, capnp::schema::Field::Reader f) const;
  bool reachesByValue(uint64_t from, uint64_t to, std::set<uint64_t>& seen) const;
  void collectScope(uint64_t scopeId, std::vector<EnumDecl>& enums, std::vector<StructDecl>& structs,
                    std::vector<InterfaceDecl>& interfaces);
  EnumDecl makeEnum(uint64_t id);
  StructDecl makeStruct(uint64_t id);
  InterfaceDecl makeInterface(uint64_t id);
  void collectBases(uint64_t ifaceId, std::vector<uint64_t>& out) const;
  void addOtherBases(InterfaceDecl& d) const;
  void addMethods(uint64_t ifaceId, std::set<uint64_t>& seen, std::vector<Method>& out, std::vector<Diag>& diags);
  bool makeFields(uint64_t structId, const std::string& methodPath, bool params, uint64_t fileId,
                  const std::vector<Step>& methodSteps, int methodLine, std::vector<Field>& out,
                  std::vector<Diag>& diags);
  std::string canonicalType(const Type& t, std::set<uint64_t>& seen) const;
  uint32_t ordinalKey(capnp::schema::Field::Reader f) const;
  // `type`: the schema's spelling of `t` (to read a List literal); `member`: a struct field's
  // initializer (else a parameter's default argument, where only scalars and Text fit).
  bool defaultLiteral(const Type& t, capnp::schema::Type::Reader type, capnp::schema::Value::Reader v, bool member,
                      std::string& out, std::string& refused) const;
  void noteUse(const Type& t);
  // Whether interface `id`, declared in another file, is generated there (a capability of it
  // names its Client). Interfaces being checked up the stack count as fine (mutual references).
  bool foreignInterfaceOk(uint64_t id);
  // Whether a value of type `t` can hold a capability (a field, element or member at any depth).
  bool holdsCaps(const Type& t) const;
  bool schemaHoldsCaps(capnp::schema::Type::Reader t, std::set<uint64_t>& seen) const;
  bool structHoldsCaps(uint64_t id, std::set<uint64_t>& seen) const;

  const capnp::SchemaLoader& loader_;
  capnp::schema::CodeGeneratorRequest::Reader request_;
  std::map<uint64_t, capnp::schema::Node::SourceInfo::Reader> sourceInfo_;
  std::map<uint64_t, Layout> layouts_;       // struct id -> layout, once computed
  std::set<uint64_t> inProgress_;            // structs being laid out (cycle check)
  std::map<uint64_t, int> listDepthAt_;      // listDepth_ when each of them was entered
  int listDepth_ = 0;                         // Lists on the way to the type being converted
  std::map<uint64_t, bool> coded_;           // struct id -> Type::coded
  std::map<uint64_t, Instance> instances_;   // synthetic id -> what it instantiates
  std::map<std::string, uint64_t> instanceIds_;  // "genericId<C++ args>" -> synthetic id
  std::vector<uint64_t> instanceOrder_;      // as they were first used
  std::map<uint64_t, std::vector<Type>> bindings_;  // generic scope id -> its arguments (Bind)
  uint64_t buildFileId_ = 0;                 // the file being generated
  std::map<uint64_t, std::vector<Diag>> structDiags_;  // struct id -> why it is refused (empty: ok)
  std::string rootInterface_;               // the interface whose PDL is being flattened
  uint64_t rootId_ = 0;
  std::vector<uint64_t> rootBases_;
  std::set<uint64_t> usedFiles_;             // files whose types the requested file uses
  std::shared_ptr<std::set<uint64_t>> checking_ = std::make_shared<std::set<uint64_t>>();  // foreign interfaces
  std::map<uint64_t, bool> foreignOk_;        // interface id -> foreignInterfaceOk
  mutable std::map<uint64_t, std::vector<std::string>> sourceLines_;  // file id -> lines
};

}  // namespace lrpc::stubgen
