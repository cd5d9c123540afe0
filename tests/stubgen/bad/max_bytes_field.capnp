@0xb7d2515330a9e809;
# $Lrpc.maxBytes on a struct field.
using Lrpc = import "/lrpc.capnp";
struct Sample {
  value @0 :Int32 $Lrpc.maxBytes(4);
}
interface Sink {
  put @0 (s :Sample) -> ();
}
