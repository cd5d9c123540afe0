@0xf646f66460ce7577;
# A struct that contains itself.
struct Node {
  value @0 :Int32;
  next @1 :Node;
}
interface Chain {
  push @0 (n :Node) -> ();
}
