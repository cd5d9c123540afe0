# A service for the asynchronous-call tests (runtime/pending.h): quick calls, slow ones, and
# a count of what ran, so that a test can tell each call ran exactly once.
@0xe900ac2bd0880532;

using Cxx = import "/capnp/c++.capnp";
using Lrpc = import "/lrpc.capnp";
$Cxx.namespace("lrpc::asynctest");

interface Work {
  echo @0 (value :UInt64) -> (value :UInt64) $Lrpc.astacks(32);
  # value back; counted.

  sleep @1 (micros :UInt32, tag :UInt64) -> (tag :UInt64) $Lrpc.astacks(32);
  # Sleeps, then gives tag back; counted.

  ran @2 () -> (calls :UInt64);
  # How many echo and sleep calls have run (started) so far.

  shout @3 (text :Text) -> (text :Text) $Lrpc.astacks(8);
  # text in capitals: variable-size both ways.

  watch @4 (micros :UInt32) -> (cancelled :Bool) $Lrpc.astacks(8);
  # Runs up to micros, looking at lrpc::callCancelled() every millisecond; stops early once it
  # is true. Whether it saw it.

  cancelsSeen @5 () -> (count :UInt64);
  # How many watch calls have seen their caller give up.

  write @6 (seq :UInt32, chunk :Data) -> stream $Lrpc.astacks(8);
  # A streaming method: chunk is `seq` bytes of the value seq & 0xff, or it is counted as damaged.

  written @7 () -> (count :UInt32, inOrder :Bool, bytes :UInt64, damaged :UInt32);
  # How many writes arrived, whether each arrived right after the one numbered one less (the
  # first numbered 0), their bytes, and how many carried a chunk other than the one expected.
}
