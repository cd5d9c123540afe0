@0xa927dd1d6094e427;
# A struct field with a default value.
struct Config {
  retries @0 :UInt32 = 3;
}
interface Service {
  configure @0 (config :Config) -> ();
}
