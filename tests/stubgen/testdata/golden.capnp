# The golden schema: one of each kind of declaration capnpc-lrpc generates, kept small so
# that a diff of its output is readable. regenerate_golden.sh rewrites the expectations.
@0xa05b7ace83a946d4;

using Cxx = import "/capnp/c++.capnp";
using Lrpc = import "/lrpc.capnp";
using Base = import "golden_base.capnp";
$Cxx.namespace("golden::v1");

struct Reading {
  # One sensor reading.
  at @0 :UInt64;
  # Nanoseconds since the epoch.
  span @1 :Base.Span;
  valid @2 :Bool;
}

interface Sensor extends(Base.Named) $Lrpc.astackBytes(2048) {
  # A sensor that can be read and labelled.
  read @0 () -> (reading :Reading);
  # The latest reading.
  history @1 (count :UInt16) -> (readings :List(Reading), more :Bool) $Lrpc.astacks(2);
  label @2 (text :Text $Lrpc.maxBytes(64), tags :List(Text)) -> ();
  upload @3 (blob :Data, delete :Bool) -> (stored :UInt32, ok :Bool);
  append @4 (chunk :Data $Lrpc.inPlace) -> (size :UInt64);
  # chunk is read where the client wrote it (no copy "E").
  dump @5 (from :UInt32) -> (at :UInt64, blob :Data);
  # The only variable-size result is Data: its tail may arrive apart (resultTailApart).
  next @6 (after :UInt64) -> (reading :Reading, tag :Text) $Lrpc.deferred;
  # The first reading after `after`, answered when it comes (through an lrpc::Reply).
  record @7 (samples :Data $Lrpc.inPlace $Lrpc.progressive) -> (count :UInt64);
  # The handler reads samples as the client writes them (lrpc::awaitArgument).
}
