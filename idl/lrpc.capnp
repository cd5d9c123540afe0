# lrpc's schema annotations: the options a service schema gives capnpc-lrpc, declared the
# way capnp's c++.capnp declares `namespace`. Import it as
#
#   using Lrpc = import "/lrpc.capnp";   # with `capnp compile -I<repo>/idl`
#
# and annotate methods, interfaces and parameters. See idl/README.md.
@0xe6fc6d0f21631893;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("lrpc::idl");

annotation astacks @0xc63cec861534f680 (method) :UInt32;
# A-stacks preallocated for this procedure per binding (default 5): how many calls of it can be
# in flight at once on one binding before callers see kResourceExhausted (or wait).

annotation astackBytes @0xc8c88bdaef2152a0 (method, interface) :UInt32;
# Bytes per A-stack for a procedure with variable-size arguments or results (Text, Data, List):
# the fixed part plus inline tail room (default 1500, the Ethernet payload). On an interface it
# is the default for each of its methods; on a method it overrides the interface. Values whose
# frame does not fit travel in an out-of-band segment instead. Ignored for fixed-size procedures,
# whose A-stack is exactly max(argument frame, result frame).

annotation maxBytes @0xd54e77b422219b17 (param, field) :UInt32;
# Largest accepted encoding of a Text, Data or List parameter or result, in bytes (for a List:
# element count * element size; for List(Text)/List(Data): 8 bytes per element plus the
# elements' bytes). The generated client refuses a larger argument with kInvalidArgument before
# sending; the generated server refuses a larger argument in a frame with kBadFrame (and a
# handler's larger result with kServerFault); the client refuses a larger result with kBadFrame.

annotation inPlace @0xd9d8806d032a08e7 (param) :Void;
# On a Data parameter: the server reads the bytes where the client put them (the A-stack's tail
# or its out-of-band segment) instead of copying them into server memory first (LRPC's copy
# "E"), so a large argument is copied once, by the client. The handler's span then aliases
# memory the client can still write during the call: use it for bytes the handler consumes
# once (stores, hashes, forwards), never for bytes it checks and then reads again. Network
# calls are unaffected (their request buffer is the server's own). Only on Data parameters.

annotation progressive @0x85abbd5a001840ae (param) :Void;
# With $Lrpc.inPlace: the handler is called as soon as the call arrives, while a client that
# streams a large argument (256 KiB or more, or a SharedBuffer after start()) may still be
# writing it, and reads it as it becomes final: before it reads the first n bytes of the span it
# calls lrpc::awaitArgument(span, n), and returns the error that gives (the client went away or
# stopped writing). The client's write and the handler's read then overlap, as the copying path's
# do. A handler that reads unawaited bytes reads whatever is there. No effect on the frames, so a
# peer generated without it interoperates. Only on $Lrpc.inPlace parameters.

annotation maxDepth @0xf7c1fa92522000df (method, interface) :UInt32;
# How deep a nested value in this procedure's frames may go (default 64): each struct with
# variable-size fields, union or group, and each List of variable-size values, is one level. A
# reader (the server for arguments, the client for results) answers a deeper frame with
# kBadFrame, so a hostile peer cannot recurse it off its stack. On an interface it is the default
# for its methods; on a method it overrides the interface. At least 1.

annotation views @0xe3a1c5d7b9f20468 (method, interface) :Void;
# The method's arguments are views on both sides (idl/README.md, "Views"): a struct that travels
# by reference is passed as S::View (std::string_view and std::span members instead of
# std::string and std::vector) and a List of such values as std::span<const S::View>; the handler
# receives every Text, Data, List and struct argument as a view into one private copy of the
# argument tail, valid until it returns (lrpc::ownedOf keeps one). The frames are the same, so a
# peer generated without it interoperates. On an interface: each of its own methods. Not with
# $Lrpc.inPlace (a view already reads a private copy in place).

annotation deferred @0xb4f1e3c2a9d87651 (method, interface) :Void;
# The handler answers through an lrpc::Reply<T> it is given (its last parameter) instead of a
# return value, now or later and from any thread (idl/README.md, "Deferred replies"): a server
# that waits for an event or calls another service holds no thread meanwhile. The caller sees
# an ordinary call; the frames are the same, so a peer generated without it interoperates. On an
# interface: each of its own methods.
