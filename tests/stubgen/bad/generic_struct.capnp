@0x84feb00cf9f62ae3;
# A generic struct used without type arguments.
struct Box(T) {
  value @0 :T;
}
interface Store {
  put @0 (box :Box) -> ();
}
