// The entry point every campaign fuzz target defines (segment_fuzz.cc, handshake_fuzz.cc),
// declared for their gtest twin (fuzz_twin_test.cc), which links with exactly one of them.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
