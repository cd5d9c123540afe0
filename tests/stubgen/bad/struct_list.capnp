@0x8b77a8ad58d9a25e;
# A struct with a List field.
struct Poly {
  points @0 :List(Int32);
}
interface Draw {
  draw @0 (p :Poly) -> ();
}
