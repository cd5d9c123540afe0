@0xe24be64368ee5664;
# A capability inside a struct (this version carries them as parameters and results only).
interface Callback {
  done @0 () -> ();
}
struct Job {
  cb @0 :Callback;
}
interface Calc {
  run @0 (job :Job) -> ();
}
