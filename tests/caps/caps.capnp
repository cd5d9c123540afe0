@0x8a5b76aacfca741e;
# Capabilities as values: a factory hands out counters (objects the server creates), takes
# them back as arguments, and returns them again.

using Cxx = import "/capnp/c++.capnp";
using Lrpc = import "/lrpc.capnp";
$Cxx.namespace("caps");

interface Counter {
  add @0 (n :Int64) -> (total :Int64);
  label @1 () -> (label :Text);
}

interface Special extends(Counter) {
  # A Counter with more: a capability of it may be held, passed and returned as a Counter.
  twice @0 (n :Int64) -> (total :Int64);
  # Adds 2n.
}

interface Named {
  name @0 () -> (name :Text);
}

interface Tagged extends(Counter, Named) {
  # Two bases: Counter opens its PDL, Named's method comes after Counter's, so a Tagged is a
  # Named through an adaptor in the process that converts it.
  tag @0 () -> (tag :Text);
}

interface Factory {
  make @0 (label :Text, start :Int64) -> (counter :Counter);
  # A new counter; the server keeps it while the client holds it.
  read @1 (counter :Counter) -> (total :Int64);
  # A counter passed back: the server calls its own object.
  again @2 (counter :Counter) -> (same :Counter);
  # A counter passed back and returned again.
  nothing @3 () -> (counter :Counter);
  # The null capability.
  pair @4 (a :Int64, b :Int64) -> (first :Counter, second :Counter, sum :Int64);
  live @5 () -> (count :UInt32);
  # Counters (Specials too) alive in the server process.
  special @6 (start :Int64) -> (special :Special);
  # A new Special, returned as one.
  asCounter @7 (start :Int64) -> (counter :Counter);
  # A new Special, returned where a Counter is declared.
  tagged @8 (start :Int64, name :Text) -> (tagged :Tagged);
  # A new Tagged.
  nameOf @9 (named :Named) -> (name :Text);
  # Calls named.name().
}

struct Holder {
  # Capabilities inside a value: a field, a union member and a List.
  label @0 :Text;
  counter @1 :Counter;
  union {
    none @2 :Void;
    other @3 :Counter;
  }
  all @4 :List(Counter);
}

interface Keeper {
  hold @0 (label :Text) -> (holder :Holder);
  # Three new counters (1, 2, 3) in a Holder: counter, other, and all = [counter, third].
  sum @1 (counters :List(Counter)) -> (total :Int64);
  # A List of capabilities passed back.
  nested @2 (holder :Holder) -> (total :Int64);
  # A struct of passed-back capabilities: counter + other + each of all.
  live @3 () -> (count :UInt32);
}

interface Listener {
  # An object the client serves: the server calls it back (runtime/callbacks.h).
  notify @0 (n :Int64) -> (reply :Int64);
  take @1 (counter :Counter) -> (total :Int64);
  # A counter the server serves, passed to the client's object: it adds 1, returns the total.
}

interface LoudListener extends(Listener) {
  # A client's object of a derived interface, passed where a Listener is declared.
  volume @0 () -> (level :UInt32);
}

interface Publisher {
  ping @0 (listener :Listener, n :Int64) -> (reply :Int64);
  # Calls listener.notify(n) once and returns its reply: one callback round trip, made while
  # the client's calling thread waits for this very call.
  subscribe @1 (listener :Listener) -> (count :UInt32);
  # Keeps the listener; how many are kept.
  publish @2 (n :Int64) -> (sum :Int64, answered :UInt32);
  # Calls notify(n) on every kept listener: the sum of the replies and how many answered.
  # Listeners whose client has gone are dropped.
  clear @3 () -> ();
  back @4 (listener :Listener) -> (same :Listener);
  # The listener, returned: the client gets its own object back.
  lend @5 (listener :Listener, start :Int64) -> (total :Int64);
  # Makes a Counter(start) and passes it to listener.take: a callback that passes a capability.
  # Each of the next three drops every kept listener, as clear does, with a reply that cannot
  # carry the releases over UDP (transport/wire.h, kFlagReleases): they are round trips then.
  clearThenFail @6 () -> ();
  # Then fails with kApplication: an error reply carries no releases.
  clearAndPad @7 (bytes :UInt32) -> (pad :Data);
  # Then returns `bytes` zero bytes: a reply of many datagrams carries none either.
  clearLater @8 () -> () $Lrpc.deferred;
  # Then answers through its Reply: a deferred answer is made apart from the handler.
  clearThenPing @9 (listener :Listener, n :Int64) -> (reply :Int64);
  # Drops every kept listener, then calls listener.notify(n): the drops come before a callback
  # the client can hold up.
  notifyAll @10 (listeners :List(Listener), n :Int64) -> (sum :Int64);
  # Calls notify(n) on each listener of the List: the sum of the replies.
  notifyAudience @11 (audience :Audience, n :Int64) -> (sum :Int64);
  # Calls notify(n) on first, then on each of all: the sum of the replies.
  echo @12 (audience :Audience) -> (audience :Audience);
  # The audience, returned: the client gets its own objects back inside a struct.
  subscribeAudience @13 (audience :Audience) -> (count :UInt32);
  # Keeps first and each of all, as subscribe does; how many are kept.
  notifyLater @14 (listener :Listener, n :Int64) -> ();
  # Starts listener.notify(n) and returns without waiting for it: a callback rung before the
  # return, which the client's waiting thread may find only after it has seen the return.
  collectLater @15 () -> (sum :Int64);
  # Waits for the replies of every notifyLater since the last collect: their sum.
}

struct Audience {
  # Objects the client serves, inside a value: a field and a List.
  label @0 :Text;
  first @1 :Listener;
  all @2 :List(Listener);
}

interface Broker {
  # Passes on capabilities of another server (a Factory it imported): proxies.
  relay @0 (label :Text, start :Int64) -> (counter :Counter);
  # A counter the other server made, returned through this one.
  read @1 (counter :Counter) -> (total :Int64);
  # A counter's total (it adds 0), called through whatever binding the counter came on.
}

struct Slot {
  # An untyped capability inside a value, and in a List of them.
  name @0 :Text;
  cap @1 :Capability;
}

interface Vault {
  # Capabilities of no declared interface (Capability): kept and handed back as they came,
  # cast by whoever calls them.
  put @0 (name :Text, cap :Capability) -> (count :UInt32);
  # Keeps cap under name (a null one too); how many are kept.
  get @1 (name :Text) -> (cap :Capability);
  # What is kept under name, or the null capability.
  slots @2 () -> (slots :List(Slot));
  # Every one kept, each in a Slot, in name order.
  addThrough @3 (cap :Capability, n :Int64) -> (total :Int64);
  # The server casts cap to a Counter and adds n.
  make @4 (start :Int64) -> (cap :Capability);
  # A new Counter of the server's, returned untyped.
  clear @5 () -> ();
}
