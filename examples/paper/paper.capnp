# The four calls of the LRPC paper (Bershad et al., 1990, Table IV), the project's yardstick.
# Used by the benchmark (bench/) and by the end-to-end tests of both paths.
@0xc4f1a3b2d5e60718;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("lrpc::paper");

struct Bytes200 {
  # A 200-byte value: BigIn and BigInOut move exactly this many bytes each way.

  w0 @0 :UInt64;   w1 @1 :UInt64;   w2 @2 :UInt64;   w3 @3 :UInt64;   w4 @4 :UInt64;
  w5 @5 :UInt64;   w6 @6 :UInt64;   w7 @7 :UInt64;   w8 @8 :UInt64;   w9 @9 :UInt64;
  w10 @10 :UInt64; w11 @11 :UInt64; w12 @12 :UInt64; w13 @13 :UInt64; w14 @14 :UInt64;
  w15 @15 :UInt64; w16 @16 :UInt64; w17 @17 :UInt64; w18 @18 :UInt64; w19 @19 :UInt64;
  w20 @20 :UInt64; w21 @21 :UInt64; w22 @22 :UInt64; w23 @23 :UInt64; w24 @24 :UInt64;
}

interface Paper {
  # The four calls of Table IV. (Cap'n Proto doc comments follow what they describe.)

  null @0 () -> ();
  # No arguments, no result: the cost of the call itself.

  add @1 (a :Int32, b :Int32) -> (sum :Int32);
  # Two 4-byte integers in, one out.

  bigIn @2 (data :Bytes200) -> ();
  # One 200-byte argument in, nothing out.

  bigInOut @3 (data :Bytes200) -> (data :Bytes200);
  # One 200-byte argument in, one 200-byte result out.
}
