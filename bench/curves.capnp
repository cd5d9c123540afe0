# Variable-size calls for the curves (bench/curves.cc): round trip and bandwidth against
# message size, from 0 B to 64 KiB, on the same host and over the network.
@0xb7c2d1e0f3a49586;

using Cxx = import "/capnp/c++.capnp";
using Lrpc = import "/lrpc.capnp";
$Cxx.namespace("lrpc::bench::curves");

interface Curves {
  # Sizes from 0 B to 64 MiB (bench/curves.cc, bench/bulk_bench.cc). Each method's comment
  # follows it: capnp takes the comment after a declaration as its doc comment.
  echo @0 (data :Data) -> (data :Data);
  # The bytes go there and come back: the round trip of a message of that size.
  sink @1 (data :Data) -> ();
  # The bytes go there only: one-way transfer, for bandwidth.
  sinkInPlace @2 (data :Data $Lrpc.inPlace $Lrpc.progressive) -> ();
  # The same, read by the server in place ($Lrpc.inPlace: no copy "E") as the client writes it
  # ($Lrpc.progressive), for bulk bandwidth.
  source @3 (bytes :UInt32) -> (data :Data);
  # `bytes` bytes come back: one-way transfer of results, for bulk bandwidth the other way.
}
