@0xd53d0f58bbc44de2;
# A type nested in an interface named like a generated class.
interface Calc {
  struct Client {
    id @0 :UInt32;
  }
  add @0 (a :Int32) -> ();
}
