// tests/gpu/pdl_test.cpp — a plan whose second step is a programmatic dependent launch
// (spec::KernelLaunch::pdl) through the judge (fixtures/pdl_rmsnorm): the dependent must
// start while the kernel before it still runs (the first waits for a flag only it raises
// before its grid dependency wait), and its wait must hold until that kernel has ended (it
// rounds what the first wrote), in validation and in both timing paths (events, captured
// graph). The same two kernels in plain stream order must fail, or the test could not tell.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/support/gpu.h"
#include "tests/support/overlap_fixture.h"

namespace fs = std::filesystem;

namespace {
std::string binary() {
  const char* e = std::getenv("TESSERA_BIN");
  return e ? e : TESSERA_BINARY;
}
}  // namespace

TEST(Judge, LaunchesProgrammaticDependentsWhileTheKernelBeforeThemRuns) {
  std::string why;
  if (!tessera::testing::have_gpu(&why)) GTEST_SKIP() << "no GPU, GPU test skipped: " << why;
  {
    auto drv = tessera::evaluator::Driver::load(&why);
    ASSERT_TRUE(drv) << why;
    tessera::evaluator::Device dev(drv, 0);
    const std::string arch = dev.info().arch();
    if (arch.rfind("sm_9", 0) != 0 && arch.rfind("sm_10", 0) != 0 && arch.rfind("sm_12", 0) != 0)
      GTEST_SKIP() << "programmatic dependent launches need sm_90 or later; this GPU is " << arch;
  }
  ASSERT_TRUE(fs::exists(binary())) << "no tessera binary at " << binary();
  tessera::testing::expect_overlap_judged(binary(), "pdl_rmsnorm", "pdl");
}
