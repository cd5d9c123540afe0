@0xac51e092db569afa;
# A generic interface.
interface Store(T) {
  put @0 (value :T) -> ();
}
