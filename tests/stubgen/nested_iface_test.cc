// Interfaces declared inside an interface (two levels deep, one extending a sibling) get the
// same stubs as file-scope ones: round trips over the network frame path (in-process double)
// and across two real processes on the same host.
#include <gtest/gtest.h>

#include <unistd.h>

#include <map>
#include <string>

#include "nested_iface.lrpc.h"
#include "runtime/exporter.h"
#include "runtime/import.h"
#include "tests/integration/exporter_process.h"
#include "tests/integration/harness.h"
#include "tests/testing/in_process_channel.h"

namespace lrpc::testing {
namespace {

using nested::Store;

class WriterImpl final : public Store::Writer::Server {
 public:
  Result<std::string> get(const Store::Key& key) override {
    auto it = values.find(key.id);
    if (it == values.end()) return Status(Errc::kApplication, "no such key");
    return it->second;
  }
  Status put(const Store::Key& key, std::string_view value) override {
    values[key.id] = std::string(value);
    return {};
  }
  std::map<uint64_t, std::string> values;
};

class CursorImpl final : public Store::Reader::Cursor::Server {
 public:
  Result<Store::Reader::Cursor::NextResults> next() override {
    Store::Reader::Cursor::NextResults r{};
    r.key.id = ++at;
    r.more = at < 3;
    return r;
  }
  uint64_t at = 0;
};

void expectWriterRoundTrip(Store::Writer::Client& w) {
  Store::Key k{};
  k.id = 42;
  ASSERT_TRUE(w.put(k, "answer").isOk());
  auto v = w.get(k);  // inherited from the sibling Reader
  ASSERT_TRUE(v.isOk()) << v.status().toString();
  EXPECT_EQ(*v, "answer");
  k.id = 7;
  EXPECT_EQ(w.get(k).status().code(), Errc::kApplication);
}

TEST(NestedInterfaces, DescriptorsNameTheirPath) {
  EXPECT_STREQ(Store::Reader::Cursor::kDescriptor.name, "nested_iface.capnp:Store.Reader.Cursor");
  EXPECT_EQ(Store::Writer::kProcedureCount, 2u);
  EXPECT_EQ(Store::Writer::kGet, 0u);  // the base's method first
  EXPECT_EQ(Store::Writer::kPut, 1u);
}

TEST(NestedInterfaces, RoundTripOverTheNetworkFramePath) {
  WriterImpl writer;
  auto bw = bindInProcess<Store::Writer>(writer);
  Store::Writer::Client w(bw.binding);
  expectWriterRoundTrip(w);
  CursorImpl cursor;
  auto bc = bindInProcess<Store::Reader::Cursor>(cursor);
  Store::Reader::Cursor::Client c(bc.binding);
  for (uint64_t i = 1; i <= 3; ++i) {
    auto n = c.next();
    ASSERT_TRUE(n.isOk()) << n.status().toString();
    EXPECT_EQ(n->key.id, i);
    EXPECT_EQ(n->more, i < 3);
  }
}

class BrowserImpl final : public nested::Catalog::Browser::Server {
 public:
  Result<nested::Catalog::Browser::ListResults> list(std::string_view prefix) override {
    nested::Catalog::Browser::ListResults r{};
    r.names = {std::string(prefix) + "a", std::string(prefix) + "b"};
    r.first.id = 9;
    return r;
  }
};

class TaggerImpl final : public nested::Tagger::Server {
 public:
  Result<nested::Tagger::TagResults> tag(const nested::Marker& m, const nested::Span& s) override {
    nested::Tagger::TagResults r{m, s};
    r.m.label += "!";
    r.s.to.at += 1;
    return r;
  }
};

TEST(NestedInterfaces, AnInterfaceInsideAStruct) {
  EXPECT_STREQ(nested::Catalog::Browser::kDescriptor.name, "nested_iface.capnp:Catalog.Browser");
  BrowserImpl impl;
  auto b = bindInProcess<nested::Catalog::Browser>(impl);
  nested::Catalog::Browser::Client c(b.binding);
  auto r = c.list("x");
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->names, (std::vector<std::string>{"xa", "xb"}));
  EXPECT_EQ(r->first.id, 9u);
}

TEST(NestedInterfaces, FileScopeStructsHoldingTypesNestedInAnInterface) {
  TaggerImpl impl;
  auto b = bindInProcess<nested::Tagger>(impl);
  nested::Tagger::Client c(b.binding);
  nested::Marker m;
  m.pos.at = 3;
  m.key.id = 4;
  m.label = "here";
  nested::Span s{{1}, {2}};
  auto r = c.tag(m, s);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->m.label, "here!");
  EXPECT_EQ(r->m.pos.at, 3u);
  EXPECT_EQ(r->m.key.id, 4u);
  EXPECT_EQ(r->s.to.at, 3u);
}

TEST(NestedInterfaces, RoundTripAcrossProcessesOnTheSameHost) {
  TempDir dir;
  ExporterProcess server(dir.path(), exportOne<Store::Writer, WriterImpl>("writer"));
  ASSERT_TRUE(server.up());
  ImportOptions o;
  o.dir = dir.path();
  Result<Store::Writer::Client> w = lrpc::import<Store::Writer>("writer", o);
  ASSERT_TRUE(w.isOk()) << w.status().toString();
  expectWriterRoundTrip(*w);
}

}  // namespace
}  // namespace lrpc::testing
