@0x9e04ca1eae2774d3;
# AnyPointer as a result.
interface Calc {
  get @0 (key :Int32) -> (value :AnyPointer);
}
