@0xc3b7a1e5d9f02468;
# $Lrpc.inPlace in a method whose arguments are views (they read a private copy already).
using Lrpc = import "/lrpc.capnp";
interface Blobs $Lrpc.views {
  put @0 (name :Text, bytes :Data $Lrpc.inPlace) -> ();
}
