# A small key-value store: the example service of examples/README.md.
@0xd3a9c1e27b5f4a60;

using Cxx = import "/capnp/c++.capnp";
using Lrpc = import "/lrpc.capnp";
$Cxx.namespace("kv");

interface KeyValue $Lrpc.astackBytes(4096) {
  # Keys are Text, values are Data. Values larger than the A-stack travel out of band.
  get @0 (key :Text) -> (found :Bool, value :Data);
  # The value stored under key, if any.
  put @1 (key :Text, value :Data) -> (replaced :Bool);
  # Stores value under key; replaced tells whether key had a value before.
  delete @2 (key :Text) -> (existed :Bool);
  # Removes key.
  list @3 (prefix :Text) -> (keys :List(Text));
  # Every key that starts with prefix, in order.
}
