@0xe24be64368ee5664;
# An interface passed as a value.
interface Callback {
  done @0 () -> ();
}
interface Calc {
  subscribe @0 (cb :Callback) -> ();
}
