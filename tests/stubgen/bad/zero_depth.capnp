@0xc5d1e8f2a4b67391;
using Lrpc = import "/lrpc.capnp";
interface Walker {
  walk @0 (depth :UInt32) -> () $Lrpc.maxDepth(0);
}
