@0xbea44c791d259f24;
# A list of capabilities.
interface Item {
  get @0 () -> ();
}
interface Bag {
  all @0 () -> (items :List(Item));
}
