@0xd1c8e0a3f5b27461;
# A data-only schema: no interface, so nothing is refused; what can be generated is.
enum Color {
  red @0;
  green @1;
}
struct Point {
  x @0 :Int32;
  y @1 :Int32;
}
struct Person {
  id @0 :UInt32;
  name @1 :AnyPointer;
}
const origin :Point = (x = 0, y = 0);
