@0xa13e78e046a376f0;
# A list of lists.
interface Matrix {
  set @0 (rows :List(List(Float64))) -> ();
}
