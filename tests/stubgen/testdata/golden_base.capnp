# Imported by golden.capnp (no namespace: the global one).
@0xce56a4f5bbf15e08;

enum Unit {
  meters @0;
  feet @1;
}

struct Span {
  length @0 :Float32;
  unit @1 :Unit;
}

interface Named {
  # Something with a name.
  name @0 () -> (name :Text);
}
