@0xc3b9a1f07d52e6a4;
# $Lrpc.progressive on a Data parameter that is copied (it needs $Lrpc.inPlace).
using Lrpc = import "/lrpc.capnp";
interface Sink {
  put @0 (data :Data $Lrpc.progressive) -> ();
}
