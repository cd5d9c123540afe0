@0xf1d6e77bf15a02ca;
# $Lrpc.inPlace on a Text parameter (only Data may be read in place).
using Lrpc = import "/lrpc.capnp";
interface Notes {
  put @0 (note :Text $Lrpc.inPlace) -> ();
}
