@0xf28d4c6b0e91a357;
# The generic capability type as a value.
interface Registry {
  lookup @0 (name :Text) -> (cap :Capability);
}
