@0xa7e5c3d1f0b94e28;
# Recursive values: a JSON-like value (its Field nested in it holds a Value, as capnp's own
# json.capnp does), a tree, and an expression whose parts hold it again by value (held through
# lrpc::Box, nullable as capnp's struct pointers are).

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

struct Expr {
  union {
    literal @0 :Int64;
    neg @1 :Expr;
    sum @2 :Sum;
  }
}

struct Sum {
  left @0 :Expr;
  right @1 :Expr;
}

interface Json {
  echo @0 (v :Value) -> (v :Value);
  count @1 (t :Tree) -> (nodes :UInt32, depth :UInt32, t :Tree);
  shallow @2 (t :Tree) -> (nodes :UInt32) $Lrpc.maxDepth(8);
  # At most 8 levels: a chain of 4 trees (7 levels) passes, one of 5 (9) does not.
  deepen @3 (levels :UInt32) -> (t :Tree);
  # Returns a chain of `levels` trees: deeper than the limit, the handler's result is refused.
  eval @4 (e :Expr) -> (value :Int64, e :Expr);
  # The same values as views (idl/README.md, "Views"): recursion through a List and a Box.
  echoView @5 (v :Value) -> (v :Value) $Lrpc.views;
  evalView @6 (e :Expr) -> (value :Int64) $Lrpc.views;
  countView @7 (t :Tree) -> (nodes :UInt32) $Lrpc.views $Lrpc.maxDepth(8);
  # Its value (a missing part, an empty Box, counts as 0) and the expression back.
}
