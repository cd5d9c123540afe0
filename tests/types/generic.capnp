@0xf3a8c1d6e2b47590;
# Generic structs used with concrete types: each use is a struct of its own.

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("gen");

struct Box(T) {
  value @0 :T;
  label @1 :Text;
}

struct Pair(A, B) {
  first @0 :A;
  second @1 :B;
}

struct Result(V, E) {
  # A tagged result: a value or an error.
  union {
    ok @0 :V;
    err @1 :E;
  }
}

struct Point {
  x @0 :Int32;
  y @1 :Int32;
}

struct Problem {
  code @0 :UInt16;
  why @1 :Text;
}

struct Holder {
  # A plain struct holding instances by value.
  names @0 :Box(List(Text));
  where @1 :Pair(Point, Box(Text));
}

interface Generic {
  boxes @0 (text :Box(Text), data :Box(Data), point :Box(Point)) -> (text :Box(Text), point :Box(Point));
  pair @1 (p :Pair(Text, Box(Text))) -> (p :Pair(Text, Box(Text)));
  parse @2 (input :Text) -> (result :Result(Point, Problem));
  hold @3 (h :Holder) -> (h :Holder, all :List(Box(Text)));
}
