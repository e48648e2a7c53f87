// tests/gpu/tile_stsm_test.cpp — the transposed ldmatrix / stmatrix pair of targets/kda/ops/kda_f16.cuh
// on the GPU (fixtures/tile_stsm.cu): every lane receives the elements ldsm_x4_t's comment
// names (column l / 4 of rows 2 (l % 4), + 1 of each matrix: a lane's pair runs down a
// column), and stsm_x4_t puts them back where they came from, element for element.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "evaluator/device.h"
#include "tests/support/gpu.h"

using namespace tessera;

TEST(TileStmatrix, TransposedStoreInvertsTheTransposedLoadLaneByLane) {
  std::string why;
  if (!tessera::testing::have_gpu(&why)) GTEST_SKIP() << "no GPU, GPU test skipped: " << why;
  auto drv = evaluator::Driver::load(&why);
  ASSERT_TRUE(drv) << why;
  evaluator::Device dev(drv, 0);
  const std::string arch = dev.info().arch();
  if (arch.rfind("sm_9", 0) != 0 && arch.rfind("sm_10", 0) != 0)
    GTEST_SKIP() << "stmatrix needs sm_90 or later; this GPU is " << arch;
  auto r = tessera::testing::compile_fixture("tile_stsm.cu", arch);
  ASSERT_TRUE(r.ok) << r.log;
  evaluator::Module mod(drv, r.cubin);
  CUfunction f = mod.function("tile_stsm_roundtrip");

  // element (row, column) holds a distinct 16-bit value
  auto value = [](int row, int col) { return static_cast<std::uint16_t>((row * 128 + col) * 7 + 3); };
  std::vector<std::uint16_t> x(32 * 128);
  for (int row = 0; row < 32; ++row)
    for (int col = 0; col < 128; ++col) x[row * 128 + col] = value(row, col);
  evaluator::Buffer gin(&dev, x.size() * 2), gout(&dev, x.size() * 2), gregs(&dev, 16 * 32 * 4 * 4);
  gin.upload(x.data(), x.size() * 2);
  CUdeviceptr in = gin.ptr(), out = gout.ptr(), regs = gregs.ptr();
  void* args[3] = {&in, &out, &regs};
  const int grid[3] = {1, 1, 1}, block[3] = {32, 1, 1};
  dev.launch(f, grid, block, 2 * 8192 + 1024, args);
  dev.sync();

  auto rb = gregs.download();
  std::vector<std::uint32_t> got(16 * 32 * 4);
  std::memcpy(got.data(), rb.data(), got.size() * 4);
  int bad = 0;
  std::string first;
  for (int g = 0; g < 16; ++g)
    for (int l = 0; l < 32; ++l)
      for (int m = 0; m < 4; ++m) {
        const int row = 8 * m + 2 * (l % 4), col = 8 * g + l / 4;
        const std::uint32_t want = value(row, col) | static_cast<std::uint32_t>(value(row + 1, col)) << 16;
        if (got[(g * 32 + l) * 4 + m] != want && bad++ == 0)
          first = "group " + std::to_string(g) + " lane " + std::to_string(l) + " matrix " + std::to_string(m);
      }
  EXPECT_EQ(bad, 0) << bad << " of 2048 lane words differ from the documented layout; first: " << first;

  auto ob = gout.download();
  std::vector<std::uint16_t> back(32 * 128);
  std::memcpy(back.data(), ob.data(), back.size() * 2);
  int diff = 0;
  for (size_t e = 0; e < back.size(); ++e) diff += back[e] != x[e];
  EXPECT_EQ(diff, 0) << diff << " of 4096 elements did not come back where they were loaded from";
}
