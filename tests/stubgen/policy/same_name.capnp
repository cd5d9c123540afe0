@0x9a6e3d1f7c05b2e8;
# A field whose name also appears earlier, in a nested struct: the line is the field's own.
struct Outer {
  struct Inner {
    name @0 :Int32;
  }
  id @0 :UInt32;
  name @1 :AnyPointer;
}
interface Dir {
  get @0 () -> (o :Outer);
}
