// tests/gpu/tile_tma_test.cpp — a "tmap:" launch argument end to end on the GPU: the spec's
// form parsed, the tensor map built by the evaluator (evaluator/tensor_map.h), one box
// copied by TMA into shared memory and read back through the sw128 layout the kda state
// kernel assumes (fixtures/tile_tma.cu). The box starts 20 rows before the end of a
// 40-row tensor: its last 12 rows must arrive as zeros.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "evaluator/device.h"
#include "evaluator/tensor_map.h"
#include "tests/support/gpu.h"

using namespace tessera;

namespace {
// bf16 bits of a small integer (exact: |v| <= 256)
std::uint16_t bf16_bits(int v) {
  const float f = static_cast<float>(v);
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<std::uint16_t>(u >> 16);
}
}  // namespace

TEST(TileTma, TensorMapArgumentBoxesLandSwizzledWithZerosPastTheTensor) {
  std::string why;
  if (!tessera::testing::have_gpu(&why)) GTEST_SKIP() << "no GPU, GPU test skipped: " << why;
  auto drv = evaluator::Driver::load(&why);
  ASSERT_TRUE(drv) << why;
  evaluator::Device dev(drv, 0);
  const std::string arch = dev.info().arch();
  if (arch.rfind("sm_9", 0) != 0 && arch.rfind("sm_10", 0) != 0)
    GTEST_SKIP() << "TMA needs sm_90 or later; this GPU is " << arch;
  auto r = tessera::testing::compile_fixture("tile_tma.cu", arch);
  ASSERT_TRUE(r.ok) << r.log;
  evaluator::Module mod(drv, r.cubin);
  CUfunction f = mod.function("tile_tma_box");

  const int T = 40, H = 3, K = 128, h = 2, t0 = 20;
  auto value = [&](int t, int hh, int k) { return ((t * H + hh) * K + k) % 251 - 125; };
  std::vector<std::uint16_t> x(static_cast<size_t>(T) * H * K);
  for (int t = 0; t < T; ++t)
    for (int hh = 0; hh < H; ++hh)
      for (int k = 0; k < K; ++k) x[(static_cast<size_t>(t) * H + hh) * K + k] = bf16_bits(value(t, hh, k));
  evaluator::Buffer gx(&dev, x.size() * 2), gout(&dev, 32 * 128 * 2);
  gx.upload(x.data(), x.size() * 2);

  spec::Tensor tensor;
  tensor.name = "x";
  tensor.dtype = spec::DType::bf16;
  tensor.shape = {"T", "H", "K"};
  spec::Bindings b{{"T", T}, {"H", H}, {"K", K}};
  auto tm = spec::parse_tensor_map_arg("tmap:x:64x1x32:128");
  ASSERT_TRUE(tm.has_value());
  CUtensorMap m = evaluator::encode_tensor_map(*drv, gx.ptr(), spec::DType::bf16, tensor, *tm, b);
  int hv = h, tv = t0;
  CUdeviceptr out = gout.ptr();
  void* args[4] = {&m, &hv, &tv, &out};
  const int grid[3] = {1, 1, 1}, block[3] = {128, 1, 1};
  dev.launch(f, grid, block, 8192 + 8 + 1024, args);
  dev.sync();
  auto bytes = gout.download();
  std::vector<std::uint16_t> got(32 * 128);
  std::memcpy(got.data(), bytes.data(), got.size() * 2);
  int bad = 0;
  std::string first;
  for (int rr = 0; rr < 32; ++rr)
    for (int k = 0; k < K; ++k) {
      const int t = t0 + rr;
      const std::uint16_t want = t < T ? bf16_bits(value(t, h, k)) : 0;
      if (got[rr * K + k] != want && bad++ == 0)
        first = "row " + std::to_string(rr) + " channel " + std::to_string(k) + ": " + std::to_string(got[rr * K + k]) +
                " against " + std::to_string(want);
    }
  EXPECT_EQ(bad, 0) << bad << " of 4096 elements differ; first: " << first;
}
