@0xb07b0eee4914c308;
# Two bases with a method of the same name.
interface A {
  run @0 () -> ();
}
interface B {
  run @0 (n :Int32) -> ();
}
interface C extends(A, B) {
  stop @0 () -> ();
}
