# The four calls of examples/paper/paper.capnp for Cap'n Proto's own RPC (the capnp_rpc
# column). A copy under another namespace: the lrpc stubs of paper.capnp already own
# lrpc::paper::Paper, and one program cannot hold two classes of that name.
@0x812a96a1fcdf5d8b;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("lrpc::bench::capnp_peer");

struct Bytes200 {
  w0 @0 :UInt64;   w1 @1 :UInt64;   w2 @2 :UInt64;   w3 @3 :UInt64;   w4 @4 :UInt64;
  w5 @5 :UInt64;   w6 @6 :UInt64;   w7 @7 :UInt64;   w8 @8 :UInt64;   w9 @9 :UInt64;
  w10 @10 :UInt64; w11 @11 :UInt64; w12 @12 :UInt64; w13 @13 :UInt64; w14 @14 :UInt64;
  w15 @15 :UInt64; w16 @16 :UInt64; w17 @17 :UInt64; w18 @18 :UInt64; w19 @19 :UInt64;
  w20 @20 :UInt64; w21 @21 :UInt64; w22 @22 :UInt64; w23 @23 :UInt64; w24 @24 :UInt64;
}

interface Paper {
  null @0 () -> ();
  add @1 (a :Int32, b :Int32) -> (sum :Int32);
  bigIn @2 (data :Bytes200) -> ();
  bigInOut @3 (data :Bytes200) -> (data :Bytes200);
}
