@0xf3b7a61c2d9e4085;
# Void and default values: Void carries nothing; struct field defaults are member
# initializers; trailing parameter defaults are the client's C++ default arguments.
using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("defaults");

enum Level {
  low @0;
  high @1;
}

struct Config {
  retries @0 :UInt32 = 3;
  ratio @1 :Float64 = 0.25;
  scale @2 :Float32 = -1.5;
  level @3 :Level = high;
  verbose @4 :Bool = true;
  marker @5 :Void;
  floor @6 :Int64 = -9223372036854775808;
  ceiling @7 :UInt64 = 18446744073709551615;
  small @8 :Int8 = -7;
  plain @9 :Int32;
  forever @10 :Float64 = inf;
}

struct Profile {
  # Data and List literals on struct fields: std::vector initializers.
  key @0 :Data = 0x"00ff10";
  primes @1 :List(UInt16) = [2, 3, 5, 7];
  names @2 :List(Text) = ["a", "b \"c\""];
  levels @3 :List(Level) = [high, low];
  grid @4 :List(List(Int8)) = [[1, -2], []];
  blobs @5 :List(Data) = [0x"01", 0x"0203"];
  ratios @6 :List(Float32) = [0.5, -1.0];
  flags @7 :List(Bool) = [true, false];
  big @8 :List(Int64) = [-9223372036854775808, 7];
}

interface Settings {
  apply @0 (config :Config, dryRun :Bool = false) -> (applied :UInt32);
  greet @1 (name :Text = "world \"quoted\"", times :UInt16 = 2) -> (greeting :Text);
  tick @2 (nothing :Void) -> (done :Void);
  # Void in and out: called as tick(), returns lrpc::Status.
  mix @3 (a :Int32 = 1, b :Int32, c :Level = low, marker :Void) -> (sum :Int32, ignored :Void);
  # Only the trailing defaults (c) become C++ default arguments; a's needs b first.
  withResultDefault @4 () -> (n :Int32 = 42);
  # A result's default never applies: results always travel.
}
