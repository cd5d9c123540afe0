// The packet fuzz target: arbitrary datagrams into a live UdpServer (over the in-memory
// loopback, driven on the calling thread) and through every decoder.
//
// Input: a sequence of records [len: u16 LE][mode: u8][len bytes]. Mode bit 0: overwrite the
// header's session and cookie with a real session's (so the fuzzer gets past the cookie check
// and into the request, fragment and ack paths); bit 1: send from another source address;
// bit 2 (with bit 0): name the session with "factory" (tests/caps/caps.capnp's Factory)
// instead of the fuzz service's, whose calls hand out capabilities and whose tunnel calls name
// them by id: live, forged, stale and mistyped ids from the network.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
