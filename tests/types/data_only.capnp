@0xe4b2c6a1d9f37c05;
# A data file with no interface: its plain types are generated, nothing is refused.

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("dataonly");

struct Config {
  name @0 :Text = "default";
  retries @1 :UInt32 = 3;
  tags @2 :List(Text);
  mode :union {
    fast @3 :Void;
    careful @4 :UInt8;
  }
}

struct Unused {
  anything @0 :AnyPointer;
}
