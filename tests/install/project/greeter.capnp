# The out-of-tree example's own service: built against an installed lrpc only.
@0xa862cb4e2997e460;

using Cxx = import "/capnp/c++.capnp";
using Lrpc = import "/lrpc.capnp";
$Cxx.namespace("greeter");

interface Greeter {
  greet @0 (name :Text) -> (greeting :Text) $Lrpc.astacks(2);
  # "hello, <name>".
  add @1 (a :Int32, b :Int32) -> (sum :Int32);
  # a + b.
}
