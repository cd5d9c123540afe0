@0xd4a7b2e9c1f35068;
# Structs that travel by reference (runtime/codec.h): variable-size fields, a named and an
# unnamed union, a group, recursion through a List and by value (lrpc::Box), a List of Lists,
# and a generic struct used with concrete types.
using Cxx = import "/capnp/c++.capnp";
using Lrpc = import "/lrpc.capnp";
$Cxx.namespace("coded");

struct Pos {
  x @0 :Int16;
  on @1 :Bool;
}

struct Node {
  name @0 :Text = "node";
  children @1 :List(Node);
  weights @2 :List(List(Float32));
  where @3 :Pos;
  meta :group {
    tag @4 :Data;
    kind :union {
      leaf @5 :Void;
      branch @6 :UInt32;
    }
  }
  union {
    plain @7 :Void;
    labelled @8 :Text;
  }
}

struct Tagged(T) {
  value @0 :T;
  tags @1 :List(Text);
}

struct Link {
  next @0 :Link;
  # Holds itself by value: an lrpc::Box, empty at the end of the chain.
  other @1 :Other;
}

struct Other {
  back @0 :Link;
  # Other and Link hold each other: both fields are Boxes.
  n @1 :UInt8;
}

interface Trees $Lrpc.maxDepth(32) {
  put @0 (root :Node, label :Tagged(Text)) -> (count :UInt32);
  all @1 () -> (nodes :List(Node), labels :List(Tagged(Text)));
  link @2 (l :Link) -> (l :Link);
  putView @3 (root :Node, label :Tagged(Text), names :List(Text)) -> (count :UInt32) $Lrpc.views;
  # The same arguments as views (runtime/codec_view.h), and Boxes as BoxViews.
  linkView @4 (l :Link) -> () $Lrpc.views;
}
