@0xe0b5a9c34d7f1e26;
# One refused struct used by several methods of several interfaces, and errors on
# several lines: each construct is reported once, in line order.
struct Entry {
  id @0 :UInt32;
  name @1 :AnyPointer;
}
interface A {
  get @0 () -> (e :Entry);
  put @1 (e :Entry) -> ();
  ping @2 (nothing :List(Void)) -> ();
}
interface B extends(A) {
  all @0 () -> (es :List(Entry));
}
