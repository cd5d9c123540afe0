@0xa927dd1d6094e427;
# A struct field with a struct literal default.
struct Point {
  x @0 :Int32;
  y @1 :Int32;
}
struct Config {
  origin @0 :Point = (x = 1, y = 2);
}
interface Service {
  configure @0 (config :Config) -> ();
}
