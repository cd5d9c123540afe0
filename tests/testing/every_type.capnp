# Every type capnpc-lrpc supports, as parameters and as results: the schema behind the stub
# round-trip, frame-validation and fuzz tests.
@0xe75c1fbbd98de8b1;

using Cxx = import "/capnp/c++.capnp";
using Lrpc = import "/lrpc.capnp";
using Base = import "every_type_base.capnp";
$Cxx.namespace("lrpc::testing");

enum Mood {
  calm @0;
  angry @1;
  # Not calm.
}

struct Inner {
  flag @0 :Bool;
  mood @1 :Mood;
  small @2 :Int8;
}

struct Outer {
  # A struct with nested structs, a nested declaration, an imported struct and padding.
  struct Nested {
    v @0 :UInt16;
  }
  a @0 :UInt8;
  inner @1 :Inner;
  big @2 :Float64;
  point @3 :Base.Point;
  flag @4 :Bool;
  nested @5 :Nested;
  color @6 :Base.Color;
}

interface Scalars {
  # Every fixed-size type.
  echoBool @0 (v :Bool) -> (v :Bool);
  allInts @1 (a :Int8, b :Int16, c :Int32, d :Int64, e :UInt8, f :UInt16, g :UInt32, h :UInt64)
          -> (a :Int8, b :Int16, c :Int32, d :Int64, e :UInt8, f :UInt16, g :UInt32, h :UInt64);
  floats @2 (f :Float32, d :Float64) -> (f :Float32, d :Float64);
  enums @3 (m :Mood, c :Base.Color) -> (m :Mood, c :Base.Color);
  outer @4 (o :Outer) -> (o :Outer);
  nothing @5 () -> ();
  # No parameters, no results.
  fail @6 (how :UInt32) -> ();
  # 0: succeeds; 1: returns an application error; 2: throws std::runtime_error; 3: throws an int.
}

interface Blobs extends(Base.Echo) $Lrpc.astackBytes(4096) {
  # Text and Data, with and without a size limit.
  text @0 (t :Text) -> (t :Text);
  data @1 (d :Data) -> (d :Data) $Lrpc.astacks(2) $Lrpc.astackBytes(9000);
  limited @2 (t :Text $Lrpc.maxBytes(16)) -> (t :Text $Lrpc.maxBytes(16));
  # Echoes t, except that "grow" answers with 17 bytes (over the result's limit).
  mixed @3 (pre :UInt8, t :Text, mid :Bool, d :Data, post :Int64)
        -> (count :UInt64, t :Text, d :Data, flag :Bool);
  # Fixed and variable values interleaved both ways.
  digest @4 (d :Data $Lrpc.inPlace) -> (hash :UInt64, n :UInt64) $Lrpc.astacks(2);
  # FNV-1a of d and its length: d is read in place, without copy "E".
}

interface Lists {
  # Lists of every element kind.
  ints @0 (v :List(Int32)) -> (v :List(Int32));
  bools @1 (v :List(Bool)) -> (v :List(Bool));
  moods @2 (v :List(Mood)) -> (v :List(Mood));
  structs @3 (v :List(Outer)) -> (v :List(Outer));
  texts @4 (v :List(Text)) -> (v :List(Text));
  datas @5 (v :List(Data)) -> (v :List(Data));
  u64s @6 (v :List(UInt64) $Lrpc.maxBytes(64)) -> (v :List(UInt64));
  limitedTexts @7 (v :List(Text) $Lrpc.maxBytes(40)) -> (n :UInt32);
}

interface Progressive {
  # A $Lrpc.progressive argument: the handler reads it while the client writes it.
  consume @0 (d :Data $Lrpc.inPlace $Lrpc.progressive, step :UInt32) -> (hash :UInt64, n :UInt64);
}

interface Everything extends(Scalars, Lists, Blobs) {
  # Multiple inheritance: Scalars, then Lists, then Echo and Blobs, then its own methods.
  self @0 () -> (name :Text);
}
