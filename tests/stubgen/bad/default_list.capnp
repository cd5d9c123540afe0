@0xe1c3d5f7a9b2c4d6;
# A parameter with a List default.
interface Sum {
  add @0 (xs :List(Int32) = [1, 2]) -> (sum :Int64);
}
