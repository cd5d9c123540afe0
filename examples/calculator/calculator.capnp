@0xbb94990dd4ebabd2;
# A calculator that hands out objects: the protocol of Cap'n Proto's calculator sample, written
# for lrpc (examples/README.md, "calculator"). Results come back as Value objects that a later
# expression can use; functions, the server's own operators or ones defined from an expression,
# are Function objects.

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("calc");

interface Calculator {
  evaluate @0 (expression :Expression) -> (value :Value);
  # The expression's result, as an object: read() gives the number, and passing it back in
  # another expression uses it there without sending the number again.

  defFunction @1 (paramCount :Int32, body :Expression) -> (func :Function);
  # A function of `paramCount` parameters whose result is `body` with them filled in.

  getOperator @2 (op :Operator) -> (func :Function);
  # One of the four arithmetic operators, as a function of two parameters.

  struct Expression {
    union {
      literal @0 :Float64;
      previousResult @1 :Value;
      # A value an earlier evaluate() returned.
      parameter @2 :UInt32;
      # The index of a parameter, inside a defFunction body.
      call :group {
        function @3 :Function;
        params @4 :List(Expression);
      }
    }
  }

  interface Value {
    read @0 () -> (value :Float64);
  }

  interface Function {
    call @0 (params :List(Float64)) -> (value :Float64);
  }

  enum Operator {
    add @0;
    subtract @1;
    multiply @2;
    divide @3;
  }
}
