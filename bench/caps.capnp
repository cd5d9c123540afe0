# Calls on capabilities (bench/caps.cc): a call on an object the server returned, against the
# same call on the imported binding, and a call that returns a new object.
@0xc41f5b2e8d7a9163;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("lrpc::bench::capsb");

interface Obj {
  null @0 () -> ();
}

interface Root {
  null @0 () -> ();
  # The same empty call on the imported binding (RootNull/<path>).
  obj @1 () -> (obj :Obj);
  # The object CapNull/<path> calls; one per session.
  make @2 () -> (obj :Obj);
  # A fresh object per call, released when the client drops it (CapMake/<path>).
  callback @3 (obj :Obj) -> ();
  # Calls obj.null() once and returns: a callback round trip to an object the client serves
  # (Callback/<path>; same host only).
}
