@0xc2e8a4f6b1d3957a;
# Interfaces declared inside an interface, at two depths, using the enclosing interface's
# nested types and each other's; an interface declared inside a struct; file-scope structs that
# hold types nested in interfaces.
using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("nested");

interface Audit {
  # Declared first, but uses a type nested two interfaces deep in Store: Store comes first.
  check @0 (pos :Store.Reader.Cursor.Pos) -> (ok :Bool);
}

interface Store {
  struct Key {
    id @0 :UInt64;
  }
  interface Reader {
    get @0 (key :Key) -> (value :Text);
    interface Cursor {
      struct Pos {
        at @0 :UInt32;
      }
      next @0 () -> (key :Key, more :Bool);
    }
  }
  interface Writer extends(Reader) {
    put @0 (key :Key, value :Text) -> ();
  }
  size @0 () -> (n :UInt64);
}

struct Catalog {
  # An interface declared inside a struct.
  name @0 :Text;
  interface Browser {
    list @0 (prefix :Text) -> (names :List(Text), first :Store.Key);
  }
}

struct Marker {
  # Holds structs nested in an interface, so it is declared after Store.
  pos @0 :Store.Reader.Cursor.Pos;
  key @1 :Store.Key;
  label @2 :Text;
}

struct Span {
  # Flattened, and declared after Store for the same reason.
  from @0 :Store.Reader.Cursor.Pos;
  to @1 :Store.Reader.Cursor.Pos;
}

interface Tagger {
  tag @0 (m :Marker, s :Span) -> (m :Marker, s :Span);
}
