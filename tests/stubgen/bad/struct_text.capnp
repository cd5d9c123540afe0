@0xccb1fe63d567841c;
# A struct with a Text field, used in a List.
struct Entry {
  id @0 :UInt32;
  name @1 :Text;
}
interface Directory {
  list @0 () -> (entries :List(Entry));
}
