@0x8e1f4a7d2c6b9035;
# A library schema imported by absolute path (capnp -I).

struct Record {
  key @0 :UInt64;
  tags @1 :AnyPointer;
}
