@0xc2e8a4f6b1d3957a;
# Interfaces declared inside an interface, at two depths, using the enclosing interface's
# nested types and each other's.
using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("nested");

interface Store {
  struct Key {
    id @0 :UInt64;
  }
  interface Reader {
    get @0 (key :Key) -> (value :Text);
    interface Cursor {
      next @0 () -> (key :Key, more :Bool);
    }
  }
  interface Writer extends(Reader) {
    put @0 (key :Key, value :Text) -> ();
  }
  size @0 () -> (n :UInt64);
}
