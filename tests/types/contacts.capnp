@0xd1c3e0a7b9f25a41;
# A contacts service as a schema writer would write it: nested structs, lists of structs,
# lists of lists, a group, unions (named and unnamed), defaults and Void members.

using Cxx = import "/capnp/c++.capnp";
using Lrpc = import "/lrpc.capnp";
$Cxx.namespace("contacts");

struct Point {
  # Fixed-size: flattened into frames and copied whole.
  x @0 :Int32;
  y @1 :Int32;
}

struct Flags {
  # Fixed-size with padding and a Bool inside.
  on @0 :Bool;
  level @1 :UInt8;
  mask @2 :UInt64;
}

struct Phone {
  number @0 :Text;
  kind @1 :Kind = mobile;
  enum Kind {
    mobile @0;
    home @1;
    work @2;
  }
}

struct Person {
  name @0 :Text;
  emails @1 :List(Text);
  age @2 :UInt32 = 30;
  phones @3 :List(Phone);
  photo @4 :Data;
  home @5 :Point;
  flags @6 :List(Flags);
  address :group {
    street @7 :Text;
    city @8 :Text = "Springfield";
  }
  employment :union {
    unemployed @9 :Void;
    employer @10 :Text;
    school @11 :Text;
    selfEmployed @12 :Void;
  }
  nickname @13 :Text = "none";
  scores @14 :List(List(Int32));
  verified @15 :Bool = true;
}

struct Shape {
  # An unnamed union beside an ordinary field.
  area @0 :Float64;
  union {
    circle @1 :Float64;
    square @2 :Point;
    polygon @3 :List(Point);
    empty @4 :Void;
  }
}

struct Error {
  code @0 :UInt16;
  message @1 :Text;
}

struct Lookup {
  # A tagged-union result: the person, or why not.
  union {
    found @0 :Person;
    missing @1 :Error;
  }
}

interface Contacts $Lrpc.astackBytes(4096) {
  add @0 (person :Person) -> (id :UInt32);
  get @1 (id :UInt32) -> (result :Lookup);
  findAll @2 (names :List(Text)) -> (people :List(Person), count :UInt32);
  shapes @3 (shapes :List(Shape)) -> (shapes :List(Shape), total :Float64);
  matrix @4 (m :List(List(Int32)), words :List(List(Text))) -> (m :List(List(Int32)), words :List(List(Text)));
  rename @5 (id :UInt32, name :Text = "anonymous") -> ();
}

interface Directory $Lrpc.views $Lrpc.astackBytes(4096) {
  # Contacts' kinds of argument as views: the client passes Person::View and spans of views,
  # the handler reads every Text, Data, List and struct argument in its private copy of the tail.
  add @0 (person :Person, tags :List(Text), photo :Data, nums :List(Int32), bits :List(Bool),
          flags :List(Flags), note :Text $Lrpc.maxBytes(16)) -> (echo :Person, digest :Text);
  shapes @1 (shapes :List(Shape), m :List(List(Int32)), lookup :Lookup, words :List(List(Text)))
         -> (shapes :List(Shape), m :List(List(Int32)), lookup :Lookup, words :List(List(Text)));
  none @2 (id :UInt32) -> (id :UInt32);
}
