@0x8a5b76aacfca741e;
# Capabilities as values: a factory hands out counters (objects the server creates), takes
# them back as arguments, and returns them again.

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("caps");

interface Counter {
  add @0 (n :Int64) -> (total :Int64);
  label @1 () -> (label :Text);
}

interface Factory {
  make @0 (label :Text, start :Int64) -> (counter :Counter);
  # A new counter; the server keeps it while the client holds it.
  read @1 (counter :Counter) -> (total :Int64);
  # A counter passed back: the server calls its own object.
  again @2 (counter :Counter) -> (same :Counter);
  # A counter passed back and returned again.
  nothing @3 () -> (counter :Counter);
  # The null capability.
  pair @4 (a :Int64, b :Int64) -> (first :Counter, second :Counter, sum :Int64);
  live @5 () -> (count :UInt32);
  # Counters alive in the server process.
}
