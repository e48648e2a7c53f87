// tests/gpu/tile_wgmma_test.cpp — the tile library's register-A wgmma forms on the
// GPU (sm_90a): a product with A from registers and a K-major B (wgmma_m64n64k16_rs),
// one with an MN-major B and N = 128 (wgmma_m64n128k16_rs), and a product whose A is
// the previous product's accumulator (acc_to_a), against the same products on the
// CPU. The inputs are multiples of 1/4 in [-1, 1], so that every product, sum and the
// fp16 rounding of the chained accumulator are exact: the results must match exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "codegen/compiler.h"
#include "evaluator/device.h"
#include "tests/support/gpu.h"

namespace fs = std::filesystem;
using namespace tessera;

namespace {

// A [64 m][64 k] row-major; B1t, B2t [64 n][64 k] (K-major B); M [64 k][128 n] (MN-major
// B), all fp16. D1 = A B1t^T, D3 = A M, D2 = fp16(D1) B2t^T with D1 fed from registers.
// Outputs fp32, row-major.
constexpr const char* kSource = R"(
#include "tile/wgmma.cuh"
using tile::u32;
extern "C" __global__ void __launch_bounds__(128) tile_wgmma_rs(const __half* A, const __half* B1t, const __half* B2t,
                                                                const __half* M, float* D1, float* D2, float* D3) {
  extern __shared__ unsigned char smem[];
  const u32 s0 = tile::smem_addr(smem), base = (s0 + 1023u) & ~1023u;
  const u32 sB1 = base, sB2 = base + 8192, sM = base + 16384;
  unsigned char* p = smem + (base - s0);
  const int t = threadIdx.x, warp = t >> 5, lane = t & 31, g = lane >> 2, q = lane & 3;
  for (int i = t; i < 64 * 64; i += 128) {  // the sw128 images
    const int r = i >> 6, c = i & 63;
    *reinterpret_cast<__half*>(p + kda::sw128_off<64>(r, c)) = B1t[i];
    *reinterpret_cast<__half*>(p + 8192 + kda::sw128_off<64>(r, c)) = B2t[i];
  }
  for (int i = t; i < 64 * 128; i += 128) *reinterpret_cast<__half*>(p + 16384 + kda::sw128_off<64>(i >> 7, i & 127)) = M[i];
  kda::fence_async_shared();
  __syncthreads();
  const int r0 = 16 * warp + g, r1 = r0 + 8;  // this thread's rows
  auto pair = [&](int r, int k) { return *reinterpret_cast<const u32*>(A + r * 64 + k); };
  u32 a[4][4];
  for (int s = 0; s < 4; ++s) {
    a[s][0] = pair(r0, 16 * s + 2 * q);
    a[s][1] = pair(r1, 16 * s + 2 * q);
    a[s][2] = pair(r0, 16 * s + 2 * q + 8);
    a[s][3] = pair(r1, 16 * s + 2 * q + 8);
  }
  kda::frag_c d1[8], d2[8], d3[16];
  kda::wgmma_fence();
  kda::wgmma_m64n64k16_rs<0, 0>(d1, a[0], kda::desc_kmajor(sB1));
  for (int s = 1; s < 4; ++s) kda::wgmma_m64n64k16_rs<0>(d1, a[s], kda::desc_kmajor(sB1 + 32 * s));
  kda::wgmma_m64n128k16_rs<1, 0>(d3, a[0], kda::desc_mnmajor(sM, 64 * 128));
  for (int s = 1; s < 4; ++s) kda::wgmma_m64n128k16_rs<1>(d3, a[s], kda::desc_mnmajor(sM + 2048 * s, 64 * 128));
  kda::wgmma_commit();
  kda::wgmma_wait<0>();
  u32 b[4][4];
  for (int s = 0; s < 4; ++s) kda::acc_to_a(b[s], d1[2 * s], d1[2 * s + 1]);
  kda::wgmma_fence();
  kda::wgmma_m64n64k16_rs<0, 0>(d2, b[0], kda::desc_kmajor(sB2));
  for (int s = 1; s < 4; ++s) kda::wgmma_m64n64k16_rs<0>(d2, b[s], kda::desc_kmajor(sB2 + 32 * s));
  kda::wgmma_commit();
  kda::wgmma_wait<0>();
  auto put = [&](float* D, int ld, const kda::frag_c* f, int nb) {
    for (int j = 0; j < nb; ++j) {
      const int c = 8 * j + 2 * q;
      D[r0 * ld + c] = f[j].x[0];
      D[r0 * ld + c + 1] = f[j].x[1];
      D[r1 * ld + c] = f[j].x[2];
      D[r1 * ld + c + 1] = f[j].x[3];
    }
  };
  put(D1, 64, d1, 8);
  put(D2, 64, d2, 8);
  put(D3, 128, d3, 16);
}
)";

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
  codegen::Compiler compiler(fs::temp_directory_path() / "tessera-tile-wgmma-test");
  auto r = compiler.compile({kSource, "tile_wgmma_test.cu", "sm_90a", {tessera::testing::source_dir() / "targets/common"}, {}});
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
  evaluator::Buffer gD1(&dev, 64 * 64 * 4), gD2(&dev, 64 * 64 * 4), gD3(&dev, 64 * 128 * 4);
  CUdeviceptr p[7] = {gA.ptr(), gB1.ptr(), gB2.ptr(), gM.ptr(), gD1.ptr(), gD2.ptr(), gD3.ptr()};
  void* args[7];
  for (int i = 0; i < 7; ++i) args[i] = &p[i];
  const int grid[3] = {1, 1, 1}, block[3] = {128, 1, 1};
  dev.launch(f, grid, block, 32768 + 1024, args);
  dev.sync();
  auto floats = [](const evaluator::Buffer& b) {
    auto bytes = b.download();
    std::vector<float> x(bytes.size() / 4);
    std::memcpy(x.data(), bytes.data(), bytes.size());
    return x;
  };
  auto d1 = floats(gD1), d2 = floats(gD2), d3 = floats(gD3);

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
}
