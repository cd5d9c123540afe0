@0xacbc94bff926d669;
# A method named like a generated member.
interface Calc {
  dispatch @0 () -> ();
}
