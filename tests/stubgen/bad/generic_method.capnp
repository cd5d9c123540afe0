@0xed9b86b88fb08c6c;
# A generic method.
interface Store {
  put @0 [T] (value :T) -> ();
}
