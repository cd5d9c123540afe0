# A struct argument and result against the same values as flat parameters (bench/struct_args.cc):
# what passing a coded struct (Text, List fields; a VarRef to its encoding in the tail) costs
# over passing its fields one by one.
@0xedf642360219ef48;

using Cxx = import "/capnp/c++.capnp";
using Lrpc = import "/lrpc.capnp";
$Cxx.namespace("lrpc::bench::structargs");

struct Rec {
  name @0 :Text;
  note @1 :Text;
  nums @2 :List(Int32);
}

interface StructArgs {
  structEcho @0 (r :Rec) -> (r :Rec);
  # The struct goes there and comes back (StructArgs/<path>).
  flatEcho @1 (name :Text, note :Text, nums :List(Int32)) -> (name :Text, note :Text, nums :List(Int32));
  # The same values as three parameters and three results (FlatArgs/<path>).
  viewEcho @2 (r :Rec) -> (r :Rec) $Lrpc.views;
  # The struct as a view on both sides: built from the caller's bytes, read in place by the
  # handler (StructView/<path>).
}
