@0xa7e5c3d1f0b94e28;
# Recursive values: a JSON-like value (its Field nested in it holds a Value, as capnp's own
# json.capnp does) and a tree.

using Cxx = import "/capnp/c++.capnp";
using Lrpc = import "/lrpc.capnp";
$Cxx.namespace("jsonv");

struct Value {
  union {
    null @0 :Void;
    boolean @1 :Bool;
    number @2 :Float64;
    string @3 :Text;
    array @4 :List(Value);
    object @5 :List(Field);
  }

  struct Field {
    name @0 :Text;
    value @1 :Value;
  }
}

struct Tree {
  label @0 :Text;
  children @1 :List(Tree);
}

interface Json {
  echo @0 (v :Value) -> (v :Value);
  count @1 (t :Tree) -> (nodes :UInt32, depth :UInt32, t :Tree);
  shallow @2 (t :Tree) -> (nodes :UInt32) $Lrpc.maxDepth(8);
  # At most 8 levels: a chain of 4 trees (7 levels) passes, one of 5 (9) does not.
  deepen @3 (levels :UInt32) -> (t :Tree);
  # Returns a chain of `levels` trees: deeper than the limit, the handler's result is refused.
}
