# Imported by every_type.capnp: types and a base interface from a second schema file,
# in a namespace of its own.
@0xa711d60cf8f680da;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("lrpc::testing::base");

enum Color {
  red @0;
  green @1;
  blue @2;
}

struct Point {
  # A plain pair, used by value across the import.
  x @0 :Int32;
  y @1 :Int32;
}

interface Echo {
  # The base interface: its methods come first in every derived PDL.
  ping @0 (n :UInt64) -> (n :UInt64);
  # Returns n + 1 (the result has the parameter's name on purpose).
}
