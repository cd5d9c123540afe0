@0xd0849f2accc71c44;
# A parameter with a Data default (numbers, enums, Bool and Text defaults are supported).
interface Store {
  put @0 (key :UInt32, d :Data = 0x"0102") -> ();
}
