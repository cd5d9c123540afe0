@0xb93f16e0c2a7d548;
# Supported and unsupported interfaces in one file (generated with LRPC_SKIP_UNSUPPORTED=1).
interface Bad {
  struct Token {
    id @0 :UInt64;
  }
  get @0 (key :Int32) -> (value :AnyPointer);
}
interface Worse extends(Bad) {
  put @0 (t :Bad.Token) -> ();
}
interface Good {
  check @0 (t :Bad.Token) -> (ok :Bool);
}
