// Same-host tests that run once per transfer mode: the modes, their test names, and a fixture
// with a names directory of its own and import options for the mode under test.
#pragma once

#include <gtest/gtest.h>

#include <iterator>
#include <string>

#include "runtime/import.h"
#include "runtime/transfer.h"
#include "tests/integration/harness.h"

namespace lrpc::testing {

inline constexpr TransferMode kTransferModes[] = {TransferMode::kAdaptive, TransferMode::kSpin,
                                                  TransferMode::kBlock};
inline constexpr int kTransferModeCount = static_cast<int>(std::size(kTransferModes));

// For INSTANTIATE_TEST_SUITE_P: `Suite/spin` reads better than `Suite/1`.
inline std::string modeTestName(const ::testing::TestParamInfo<TransferMode>& info) {
  return std::string(transferModeName(info.param));
}

class PerModeTest : public ::testing::TestWithParam<TransferMode> {
 protected:
  ImportOptions opts() const {
    ImportOptions o;
    o.dir = dir_.path();
    o.mode = GetParam();
    return o;
  }
  TempDir dir_;
};

}  // namespace lrpc::testing
