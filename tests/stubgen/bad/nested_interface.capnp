@0xb5653b3bd6e0d7cb;
# An interface nested in an interface.
interface Outer {
  interface Inner {
    call @0 () -> ();
  }
  get @0 () -> ();
}
