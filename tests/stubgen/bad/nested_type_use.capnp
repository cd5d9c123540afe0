@0x94b1902698a2a192;
# A file-scope struct that holds a struct nested in an interface whose frames hold it: a cycle.
struct Outer {
  inner @0 :Service.Inner;
}
interface Service {
  struct Inner {
    v @0 :Int32;
  }
  call @0 (o :Outer) -> ();
}
