@0x8eb37a6f1984459b;
# No A-stacks for a procedure.
using Lrpc = import "/lrpc.capnp";
interface Calc {
  add @0 (a :Int32) -> () $Lrpc.astacks(0);
}
