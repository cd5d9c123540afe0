@0xd6b0e2a85f3c7149;
# Uses a struct of an imported schema that cannot be generated.
using Types = import "/types.capnp";
interface Store {
  put @0 (r :Types.Record) -> ();
}
