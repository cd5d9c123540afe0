@0xf646f66460ce7577;
# A generic struct that contains itself (a plain one is held through lrpc::Box).
struct Node(T) {
  value @0 :T;
  next @1 :Node(T);
}
interface Chain {
  push @0 (n :Node(Text)) -> ();
}
