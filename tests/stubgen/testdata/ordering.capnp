# Declaration order the generator must fix up for C++: a derived interface before its base, a
# struct before the struct it contains, types nested in an interface used by another one, an
# interface without methods, a constant, and names that are C++ keywords.
@0xf946fcdb3f498d02;

interface Derived extends(Base) {
  own @0 (k :Base.Kind, p :Later) -> (p :Later, k :Base.Kind);
}

interface Base {
  enum Kind {
    first @0;
    second @1;
  }
  struct Pair {
    x @0 :Int8;
    y @1 :Int64;
  }
  pair @0 (p :Pair) -> (q :Pair, r :Pair);
}

interface Empty {}

struct Later {
  first @0 :Earlier;
  class @1 :UInt8;
}

struct Earlier {
  v @0 :Float32;
}

const answer :Int32 = 42;
