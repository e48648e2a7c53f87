// tests/gpu/tile_wgmma_test.cpp — the tile library's register-A wgmma forms on the
// GPU (sm_90a; the kernel is fixtures/tile_wgmma_rs.cu): a product with A from registers
// and a K-major B (wgmma_m64n64k16_rs), one with an MN-major B and N = 128
// (wgmma_m64n128k16_rs), one with N = 32 (wgmma_m64n32k16_rs), one with N = K = 32 from a
// 64-byte-swizzled image (desc_kmajor64), and a product whose A is the previous product's
// accumulator
// (acc_to_a), against the same products on the CPU. The inputs are multiples of 1/4 in
// [-1, 1], so that every product, sum and the fp16 rounding of the chained accumulator
// are exact: the results must match exactly. Also the wide shared-memory products
// (fixtures/tile_wgmma_wide.cu: wgmma_ss with N = 256 and 192, bf16), exact the same way.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "evaluator/device.h"
#include "tests/support/gpu.h"

using namespace tessera;

namespace {

std::vector<_Float16> random_quarters(size_t n, std::mt19937& rng) {
  std::uniform_int_distribution<int> v(-4, 4);
  std::vector<_Float16> x(n);
  for (auto& e : x) e = static_cast<_Float16>(v(rng) / 4.0f);
  return x;
}

// Index and values of the first element where got and want differ ("" when none).
std::string first_mismatch(const std::vector<float>& got, const std::vector<double>& want) {
  for (size_t i = 0; i < want.size(); ++i)
    if (static_cast<double>(got[i]) != want[i])
      return "element " + std::to_string(i) + ": " + std::to_string(got[i]) + " against " + std::to_string(want[i]);
  return "";
}

}  // namespace

TEST(TileWgmma, RegisterOperandsAndChainedProductsMatchTheCpu) {
  std::string why;
  if (!tessera::testing::have_gpu(&why)) GTEST_SKIP() << "no GPU, GPU test skipped: " << why;
  auto drv = evaluator::Driver::load(&why);
  ASSERT_TRUE(drv) << why;
  evaluator::Device dev(drv, 0);
  if (dev.info().arch() != "sm_90a") GTEST_SKIP() << "wgmma needs sm_90a; this GPU is " << dev.info().arch();
  auto r = tessera::testing::compile_fixture("tile_wgmma_rs.cu", "sm_90a");
  ASSERT_TRUE(r.ok) << r.log;
  EXPECT_FALSE(r.spills()) << r.log;
  evaluator::Module mod(drv, r.cubin);
  CUfunction f = mod.function("tile_wgmma_rs");

  std::mt19937 rng(20261130);
  auto A = random_quarters(64 * 64, rng), B1t = random_quarters(64 * 64, rng), B2t = random_quarters(64 * 64, rng),
       M = random_quarters(64 * 128, rng);
  auto upload = [&](const std::vector<_Float16>& x) {
    evaluator::Buffer b(&dev, x.size() * 2);
    b.upload(x.data(), x.size() * 2);
    return b;
  };
  evaluator::Buffer gA = upload(A), gB1 = upload(B1t), gB2 = upload(B2t), gM = upload(M);
  evaluator::Buffer gD1(&dev, 64 * 64 * 4), gD2(&dev, 64 * 64 * 4), gD3(&dev, 64 * 128 * 4), gD4(&dev, 64 * 32 * 4),
      gD5(&dev, 64 * 32 * 4);
  CUdeviceptr p[9] = {gA.ptr(), gB1.ptr(), gB2.ptr(), gM.ptr(), gD1.ptr(), gD2.ptr(), gD3.ptr(), gD4.ptr(), gD5.ptr()};
  void* args[9];
  for (int i = 0; i < 9; ++i) args[i] = &p[i];
  const int grid[3] = {1, 1, 1}, block[3] = {128, 1, 1};
  dev.launch(f, grid, block, 32768 + 2048 + 1024, args);
  dev.sync();
  auto floats = [](const evaluator::Buffer& b) {
    auto bytes = b.download();
    std::vector<float> x(bytes.size() / 4);
    std::memcpy(x.data(), bytes.data(), bytes.size());
    return x;
  };
  auto d1 = floats(gD1), d2 = floats(gD2), d3 = floats(gD3), d4 = floats(gD4), d5 = floats(gD5);

  std::vector<double> w1(64 * 64), w2(64 * 64), w3(64 * 128);
  for (int m = 0; m < 64; ++m) {
    for (int n = 0; n < 64; ++n) {
      double s = 0;
      for (int k = 0; k < 64; ++k) s += double(A[m * 64 + k]) * double(B1t[n * 64 + k]);
      w1[m * 64 + n] = s;
    }
    for (int n = 0; n < 128; ++n) {
      double s = 0;
      for (int k = 0; k < 64; ++k) s += double(A[m * 64 + k]) * double(M[k * 128 + n]);
      w3[m * 128 + n] = s;
    }
  }
  for (int m = 0; m < 64; ++m)
    for (int n = 0; n < 64; ++n) {
      double s = 0;
      for (int k = 0; k < 64; ++k) s += double(static_cast<_Float16>(w1[m * 64 + k])) * double(B2t[n * 64 + k]);
      w2[m * 64 + n] = s;
    }
  EXPECT_EQ(first_mismatch(d1, w1), "") << "A from registers, K-major B (m64n64k16)";
  EXPECT_EQ(first_mismatch(d3, w3), "") << "A from registers, MN-major B (m64n128k16)";
  EXPECT_EQ(first_mismatch(d2, w2), "") << "A from the previous product's accumulator (acc_to_a)";
  std::vector<double> w4(64 * 32);
  for (int m = 0; m < 64; ++m)
    for (int n = 0; n < 32; ++n) w4[m * 32 + n] = w1[m * 64 + n];
  EXPECT_EQ(first_mismatch(d4, w4), "") << "A from registers, K-major B, N = 32 (m64n32k16)";
  std::vector<double> w5(64 * 32);
  for (int m = 0; m < 64; ++m)
    for (int n = 0; n < 32; ++n) {
      double s = 0;
      for (int k = 0; k < 32; ++k) s += double(A[m * 64 + k]) * double(B1t[n * 64 + k]);
      w5[m * 32 + n] = s;
    }
  EXPECT_EQ(first_mismatch(d5, w5), "") << "A from registers, K-major B from a sw64 image, N = K = 32";
}

namespace {

std::vector<std::uint16_t> random_quarters_bf16(size_t n, std::mt19937& rng) {  // exact in bf16
  std::uniform_int_distribution<int> v(-4, 4);
  std::vector<std::uint16_t> x(n);
  for (auto& e : x) {
    const float f = v(rng) / 4.0f;
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    e = static_cast<std::uint16_t>(u >> 16);  // (a multiple of 1/4: the low half is zero)
  }
  return x;
}
double from_bf16(std::uint16_t h) {
  const std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

TEST(TileWgmma, WideSharedMemoryProductsMatchTheCpu) {
  std::string why;
  if (!tessera::testing::have_gpu(&why)) GTEST_SKIP() << "no GPU, GPU test skipped: " << why;
  auto drv = evaluator::Driver::load(&why);
  ASSERT_TRUE(drv) << why;
  evaluator::Device dev(drv, 0);
  if (dev.info().arch() != "sm_90a") GTEST_SKIP() << "wgmma needs sm_90a; this GPU is " << dev.info().arch();
  auto r = tessera::testing::compile_fixture("tile_wgmma_wide.cu", "sm_90a");
  ASSERT_TRUE(r.ok) << r.log;
  EXPECT_FALSE(r.spills()) << r.log;
  evaluator::Module mod(drv, r.cubin);
  CUfunction f = mod.function("tile_wgmma_wide");
  std::mt19937 rng(20261203);
  const auto A = random_quarters_bf16(64 * 64, rng), B = random_quarters_bf16(256 * 64, rng);
  evaluator::Buffer gA(&dev, A.size() * 2), gB(&dev, B.size() * 2), g256(&dev, 64 * 256 * 4), g192(&dev, 64 * 192 * 4);
  gA.upload(A.data(), A.size() * 2);
  gB.upload(B.data(), B.size() * 2);
  CUdeviceptr p[4] = {gA.ptr(), gB.ptr(), g256.ptr(), g192.ptr()};
  void* args[4] = {&p[0], &p[1], &p[2], &p[3]};
  const int grid[3] = {1, 1, 1}, block[3] = {128, 1, 1};
  dev.launch(f, grid, block, 64 * 128 + 256 * 128 + 1024, args);
  dev.sync();
  auto floats = [](const evaluator::Buffer& b) {
    auto bytes = b.download();
    std::vector<float> x(bytes.size() / 4);
    std::memcpy(x.data(), bytes.data(), bytes.size());
    return x;
  };
  const auto d256 = floats(g256), d192 = floats(g192);
  std::vector<double> w256(64 * 256), w192(64 * 192);
  for (int m = 0; m < 64; ++m)
    for (int n = 0; n < 256; ++n) {
      double s = 0;
      for (int k = 0; k < 64; ++k) s += from_bf16(A[m * 64 + k]) * from_bf16(B[n * 64 + k]);
      w256[m * 256 + n] = s;
      if (n < 192) w192[m * 192 + n] = s;
    }
  EXPECT_EQ(first_mismatch(d256, w256), "") << "K-major A and B from shared memory, N = 256 (m64n256k16)";
  EXPECT_EQ(first_mismatch(d192, w192), "") << "K-major A and B from shared memory, N = 192 (m64n192k16)";
}
