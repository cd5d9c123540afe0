@0xd0849f2accc71c44;
# A parameter with a default value.
interface Calc {
  add @0 (a :Int32, b :Int32 = 5) -> (sum :Int32);
}
