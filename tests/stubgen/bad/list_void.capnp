@0xa7102eee42f4a894;
# A List(Void) parameter (Void itself is supported: it carries nothing).
interface Ping {
  ping @0 (nothing :List(Void)) -> ();
}
