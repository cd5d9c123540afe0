@0xc2e8a4f6b1d3957a;
# Interfaces declared inside an interface, at two depths, using the enclosing interface's
# nested types and each other's.
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
