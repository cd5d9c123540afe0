@0xbda3223674671a40;
# $Lrpc.maxBytes on a fixed-size parameter.
using Lrpc = import "/lrpc.capnp";
interface Calc {
  neg @0 (a :Int32 $Lrpc.maxBytes(4)) -> (b :Int32);
}
