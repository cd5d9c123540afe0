# A service for the deferred-reply tests (runtime/reply.h): takers wait for a letter without
# holding a server thread, and a put answers them from the putter's thread.
@0xd4a1f27c9e3b5a61;

using Cxx = import "/capnp/c++.capnp";
using Lrpc = import "/lrpc.capnp";
$Cxx.namespace("lrpc::deferredtest");

interface Mailbox {
  take @0 (box :UInt32) -> (letter :Text) $Lrpc.deferred $Lrpc.astacks(32);
  # Waits until a letter is put into `box`, and gives it.

  put @1 (box :UInt32, letter :Text) -> (answered :UInt32, cancelled :UInt32);
  # Answers every taker of `box` with `letter`: how many, and how many of them had given up.

  waiting @2 (box :UInt32) -> (count :UInt32);
  # How many takers wait on `box`.

  echo @3 (value :UInt64) -> (value :UInt64) $Lrpc.deferred;
  # Answered through its Reply before the handler returns.

  drop @4 () -> (value :UInt64) $Lrpc.deferred;
  # The handler drops its Reply unanswered.

  fail @5 (text :Text) -> () $Lrpc.deferred;
  # The handler throws a std::runtime_error(text) without answering.

  big @6 (bytes :UInt32) -> (blob :Data) $Lrpc.deferred;
  # Answered from another thread with `bytes` bytes, byte i being i * 7 mod 256.

  child @7 () -> (box :Mailbox);
  # Another Mailbox over the same boxes, reached as a capability.

  hold @8 () -> () $Lrpc.deferred;
  # The handler keeps its Reply in the object itself: dropped unanswered when the object goes.

  counts @9 () -> (held :UInt32, destroyed :UInt32);
  # How many hold calls all the Mailboxes over these boxes took, and how many Mailboxes have gone.
}
