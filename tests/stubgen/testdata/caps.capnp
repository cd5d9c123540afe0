@0xa31d0c6f4b2e7d95;
# Capabilities as values: a parameter, a result, several results, a struct field, a union
# member, a List, and an interface in another scope; a parameter and a result of one name; a
# nested interface returning its enclosing one (whose Client is emitted after its own).
# regenerate_golden.sh rewrites caps.lrpc.*.

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("golden::caps");

interface Item {
  get @0 () -> (value :UInt32);
  split @1 () -> (left :Item, right :Item);
  # Several results holding its own interface.
}

struct Box {
  item @0 :Item;
  union {
    empty @1 :Void;
    spare @2 :Item;
  }
  items @3 :List(Item);
}

interface Shop {
  make @0 (value :UInt32) -> (item :Item);
  price @1 (item :Item) -> (cents :UInt64);
  two @2 () -> (a :Item, b :Item);
  box @3 (box :Box) -> (box :Box);
  all @4 (items :List(Item)) -> (count :UInt32);
  swap @5 (item :Item) -> (item :Item);
  write @6 (bytes :Data) -> stream;
  open @7 (hook :Hook) -> (shop :Shop);

  interface Hook {
    back @0 () -> (shop :Shop);
    backTwice @1 () -> (first :Shop, second :Shop);
  }
}
