#!/usr/bin/env python3
# Writes the checked-in seed corpora of the campaign fuzz targets (formats: the comments at
# the top of segment_fuzz.cc and handshake_fuzz.cc). Run from this directory; the output is
# committed, so this only needs re-running when a format changes.
import os
import struct

def write(kind, name, data):
    os.makedirs(f"corpus/{kind}", exist_ok=True)
    with open(f"corpus/{kind}/{name}", "wb") as f:
        f.write(data)

# ---- segment: 24-byte records [what, status, resultFlags, startStatus, resultTail u32,
#      argSegBytes u32, argSegReal u32, resSegBytes u32, resSegReal u32]
def rec(what=0, status=0, flags=0, start=0, tail=0, ab=0, ar=0, rb=0, rr=0):
    return struct.pack("<BBBBIIIII", what, status, flags, start, tail, ab, ar, rb, rr)

SEAL, BIG, ARGSEG, RESSEG, OTHER, REFUSE, NORET = 0x08, 0x01, 0x02, 0x04, 0x10, 0x20, 0x40
write("segment", "inline_ok", rec(tail=16))
write("segment", "big_argument_sealed", rec(BIG | SEAL, ab=131072, ar=131072))
write("segment", "big_argument_unsealed", rec(BIG, ab=131072, ar=131072))
write("segment", "big_argument_short_segment", rec(BIG | SEAL, ab=65536, ar=65536))
write("segment", "big_argument_lying_size", rec(BIG | SEAL, ab=1 << 20, ar=4096))
write("segment", "result_segment_ok", rec(RESSEG | SEAL, flags=1, tail=5000, rb=65536, rr=65536))
write("segment", "result_segment_unsealed", rec(RESSEG, flags=1, tail=5000, rb=65536, rr=65536))
write("segment", "result_tail_beyond_segment", rec(RESSEG | SEAL, flags=1, tail=70000, rb=65536, rr=65536))
write("segment", "result_segment_lying_size", rec(RESSEG | SEAL, flags=1, tail=100, rb=1 << 21, rr=4096))
write("segment", "result_oob_without_segment", rec(flags=1, tail=100))
write("segment", "result_segment_other_astack", rec(RESSEG | OTHER | SEAL, flags=1, start=3, tail=10, rb=65536, rr=65536))
write("segment", "inline_tail_too_long", rec(tail=0xffffffff))
write("segment", "unknown_flags", rec(flags=0x80, tail=4))
write("segment", "error_status_with_text", rec(status=3, tail=1000))
write("segment", "unknown_status", rec(status=200, tail=10))
write("segment", "thread_start_refused", rec(REFUSE, start=5))
write("segment", "no_return_deadline", rec(NORET))
write("segment", "two_calls_reuse_segment",
      rec(RESSEG | SEAL, flags=1, tail=5000, rb=65536, rr=65536) + rec(flags=1, tail=6000))
write("segment", "everything", rec(BIG | ARGSEG | RESSEG | SEAL, flags=1, tail=300, ab=131072, ar=131072,
                                   rb=65536, rr=65536) * 3)

# ---- handshake: [mode][helloLen u16][hello bytes] then ops
HELLO_BYTES = 128
def hello(mode=3, body=b""):
    body = body.ljust(HELLO_BYTES, b"\0")
    return bytes([mode]) + struct.pack("<H", len(body)) + body

def msg(kind, typ, astack, nbytes=0, status=0):
    return bytes([kind]) + struct.pack("<IIQB7x", typ, astack, nbytes, status)

def call(astack, argtail=0, flags=0, key=1, frame=b"", procedure=0):
    return bytes([2, astack, procedure]) + struct.pack("<I", argtail) + bytes([flags, key]) + frame.ljust(16, b"\0")[:16]

def grow(astack, n):
    return bytes([3, astack]) + struct.pack("<I", n)

ADD, ECHO, FAIL, NULL = 5, 10, 16, 0
write("handshake", "hello_only", hello())
write("handshake", "add_call", hello() + call(ADD, frame=struct.pack("<ii", 2, 3)))
write("handshake", "null_and_fail", hello() + call(NULL) + call(FAIL))
write("handshake", "echo_inline", hello() + call(ECHO, argtail=5, frame=struct.pack("<II", 0, 5)))
write("handshake", "echo_out_of_band", hello() + grow(ECHO, 100000) +
      call(ECHO, argtail=50000, flags=1, frame=struct.pack("<II", 0, 50000)))
write("handshake", "echo_tail_beyond_segment", hello() + grow(ECHO, 1000) +
      call(ECHO, argtail=70000, flags=1, frame=struct.pack("<II", 0, 70000)))
write("handshake", "echo_bad_varref", hello() + call(ECHO, argtail=50, frame=struct.pack("<II", 0xffffffff, 2)))
write("handshake", "forged_key", hello() + call(ADD, key=0) + call(ADD))
write("handshake", "wrong_procedure", hello() + call(ADD, procedure=7) + call(ADD, procedure=255))
write("handshake", "unknown_flags", hello() + call(ECHO, flags=0x80))
write("handshake", "start_every_astack", hello() + b"".join(msg(0, 1, i) for i in range(16)))
write("handshake", "start_out_of_range", hello() + msg(0, 1, 100000))
write("handshake", "message_with_fd", hello() + msg(0x10, 1, 0))
write("handshake", "unknown_message_type", hello() + msg(0, 77, 0))
write("handshake", "grow_huge", hello() + grow(ECHO, 0xffffffff) + grow(ECHO, 0))
write("handshake", "raw_short_message", hello() + bytes([1, 7]) + bytes(range(1, 8)))
write("handshake", "hello_garbage", bytes([0]) + struct.pack("<H", 7) + bytes(range(7)))
write("handshake", "hello_wrong_version", bytes([0]) + struct.pack("<H", HELLO_BYTES) +
      struct.pack("<II", 0x4c525048, 2).ljust(HELLO_BYTES, b"\0"))
write("handshake", "hello_too_long", hello(body=b"x" * 300))
write("handshake", "hello_bad_mode", hello(mode=1, body=b"\0" * 28 + b"\x09"))

# ---- packet: calls on the "factory" session (mode bits 0 and 2, packet_fuzz.h) that make
#      counters and call them through the tunnel by live, forged, stale and mistyped ids.
#      Records [len u16][mode][datagram]; the harness names the session and cookie.
FACTORY = 1 | 4
COUNTER_ID = 0xf5547d434687f211  # caps.capnp's Counter (the generated kDescriptor)
MAKE, READ, LIVE, TUNNEL = 0, 1, 5, 10  # Factory's procedures (caps.lrpc.h)
RELEASE = 0xFFFFFFFF                    # kReleaseCap (runtime/capability.h)

def request(seq, procedure, payload):
    flags = 0x01 if 32 + len(payload) <= 64 else 0  # single cell
    header = struct.pack("<HBBBBHQIIII", 0x524C, 4, 3, flags, 0, procedure, 0, 0, seq, 0, len(payload))
    return header + payload

def tunnel(seq, object_id, procedure=0, iface=COUNTER_ID, inner=struct.pack("<q", 1)):
    # CapCallArgs {frame {offset, length}, object, procedure, iface}, then the inner frame.
    return request(seq, TUNNEL, struct.pack("<IIIIQ", 0, len(inner), object_id, procedure, iface) + inner)

def make(seq, start):
    return request(seq, MAKE, struct.pack("<IIq", 0, 1, start) + b"c")  # label "c" in the tail

def calls(*datagrams):
    return b"".join(struct.pack("<HB", len(d), FACTORY) + d for d in datagrams)

FIRST = 1  # the first id a session's table gives out (slot 0, generation 0)
write("packet", "caps_make_and_call", calls(make(1, 5), tunnel(2, FIRST), request(3, LIVE, b"")))
write("packet", "caps_forged_ids", calls(make(1, 5), tunnel(2, 0x7FF00001), tunnel(3, 0x00000007),
                                         tunnel(4, 0xFFFFFFFE), tunnel(5, 0)))
write("packet", "caps_stale_after_release", calls(make(1, 5), tunnel(2, FIRST, RELEASE, 0, b""), tunnel(3, FIRST),
                                                  make(4, 6), tunnel(5, FIRST)))
write("packet", "caps_mistyped", calls(make(1, 5), tunnel(2, FIRST, 0, 0x1234), tunnel(3, FIRST, 9),
                                       tunnel(4, FIRST, 0, COUNTER_ID, b"")))
write("packet", "caps_read_passes_an_id", calls(make(1, 5), request(2, READ, struct.pack("<I", FIRST)),
                                                request(3, READ, struct.pack("<I", 0x7FF00001))))
write("packet", "caps_flood_without_release", calls(*[make(i, i) for i in range(1, 13)]))

# ---- secure_endpoint: the packet seeds inside the secure session (records [len u16][mode][bytes];
#      packet mode bit 0 "name the session" becomes seal + name (1|2), bit 1 "other address" 16),
#      plus what only the secure endpoint sees.
def records(data):
    pos, out = 0, []
    while pos + 3 <= len(data):
        n = data[pos] | (data[pos + 1] << 8)
        mode = data[pos + 2]
        pos += 3
        out.append((mode, data[pos:pos + n]))
        pos += n
    return out

def record(mode, body):
    return struct.pack("<HB", len(body), mode) + body

for name in sorted(os.listdir("corpus/packet")):
    if name.startswith("caps_"):
        continue  # the secure harness serves no "factory" session (mode bit 2)
    with open(f"corpus/packet/{name}", "rb") as f:
        seed = f.read()
    out = b""
    for mode, body in records(seed):
        out += record(1 | (2 if mode & 1 else 0) | (16 if mode & 2 else 0), body)
    write("secure_endpoint", "sealed_" + name, out)
SEAL, NAME, XOR_HELLO, REPLAY, OTHER_ADDR = 1, 2, 4, 8, 16
write("secure_endpoint", "raw_garbage", record(0, bytes(range(64))))
write("secure_endpoint", "fresh_hello", record(XOR_HELLO, b""))
write("secure_endpoint", "fresh_hello_flipped", record(XOR_HELLO, b"\0" * 40 + b"\x01"))
write("secure_endpoint", "fresh_hello_other_address", record(XOR_HELLO | OTHER_ADDR, b""))
write("secure_endpoint", "hello_storm", record(XOR_HELLO, b"") * 40)
write("secure_endpoint", "sealed_then_replayed", record(SEAL | NAME, bytes(32)) + record(REPLAY, b"") * 3)
write("secure_endpoint", "replay_from_other_address", record(SEAL | NAME, bytes(32)) + record(REPLAY | OTHER_ADDR, b""))
write("secure_endpoint", "data_magic_garbage", record(0, b"\x4c\x53\x04\x00" + bytes(60)))
