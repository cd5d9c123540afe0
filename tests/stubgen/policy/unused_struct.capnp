@0xa4e2c7b1d9f03852;
# The only problems are in structs no method uses: the interface is generated.
struct Point {
  x @0 :Int32;
  y @1 :Int32;
}
struct Shape {
  outline @0 :AnyPointer;
}
struct Label {
  text @0 :AnyStruct;
  struct Style {
    bold @0 :Bool;
  }
}
interface Canvas {
  move @0 (to :Point) -> (from :Point);
  style @1 (s :Label.Style) -> ();
}
