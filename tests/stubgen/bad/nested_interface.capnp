@0xb5653b3bd6e0d7cb;
# An interface nested in a struct.
struct Outer {
  interface Inner {
    call @0 () -> ();
  }
  x @0 :Int32;
}
interface Service {
  get @0 () -> (o :Outer);
}
