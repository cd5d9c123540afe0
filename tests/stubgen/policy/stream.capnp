@0xc7a2f9e15b3d6084;
# A streaming method: generated as a call with no results.
interface Sink {
  write @0 (bytes :Data) -> stream;
  done @1 () -> ();
}
