@0xa7102eee42f4a894;
# A Void parameter.
interface Ping {
  ping @0 (nothing :Void) -> ();
}
