@0x9c7d7112bb28f436;
# A struct with a union.
struct Shape {
  union {
    circle @0 :Float64;
    square @1 :Float64;
  }
}
interface Draw {
  draw @0 (shape :Shape) -> ();
}
