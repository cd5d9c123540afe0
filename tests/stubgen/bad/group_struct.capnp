@0xc01f86b1cefe8f11;
# A struct with a group.
struct Person {
  age @0 :UInt8;
  address :group {
    zip @1 :UInt32;
  }
}
interface People {
  add @0 (p :Person) -> ();
}
