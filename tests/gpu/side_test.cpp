// tests/gpu/side_test.cpp — a plan with a side launch (spec::KernelLaunch::stream) through
// the judge (fixtures/side_rmsnorm): the side kernel, forked first, must run beside the
// main kernel launched after it (they wait on each other), and the program's end must wait
// for it, in validation and in both timing paths (events, captured graph). The same two
// kernels on one stream must fail, or the test could not tell.
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

TEST(Judge, RunsSideLaunchesBesideTheMainStreamAndWaitsForThem) {
  std::string why;
  if (!tessera::testing::have_gpu(&why)) GTEST_SKIP() << "no GPU, GPU test skipped: " << why;
  ASSERT_TRUE(fs::exists(binary())) << "no tessera binary at " << binary();
  tessera::testing::expect_overlap_judged(binary(), "side_rmsnorm", "side");
}
