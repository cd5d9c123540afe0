@0xce75c2a4ba0230cb;
# $Lrpc.inPlace on a result (only a server reads in place, and only its arguments).
using Lrpc = import "/lrpc.capnp";
interface Store {
  get @0 (key :UInt64) -> (value :Data $Lrpc.inPlace);
}
