// tests/gpu/tile_exp2_test.cpp — tile::exp2_poly (2^x on the FMA pipe, what fa3_wgmma's
// POLY puts in place of ex2 for some fragments) against 2^x in double on x in [-125, 8]:
// relative error below 1e-4 (its comment says 7.5e-5; P is rounded to bf16 next, 3.9e-3)
// on a 1/1024 grid, the integers included (where only the exponent trick acts); below
// -125, a value no larger than 1.5 * 2^-125 (the comment's "about 2^-125, not 0").
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "evaluator/device.h"
#include "tests/support/gpu.h"

using namespace tessera;

TEST(TileExp2, PolynomialMatchesTwoToTheXWithinItsBound) {
  std::string why;
  if (!tessera::testing::have_gpu(&why)) GTEST_SKIP() << "no GPU, GPU test skipped: " << why;
  auto drv = evaluator::Driver::load(&why);
  ASSERT_TRUE(drv) << why;
  evaluator::Device dev(drv, 0);
  auto r = tessera::testing::compile_fixture("tile_exp2.cu", dev.info().arch());
  ASSERT_TRUE(r.ok) << r.log;
  evaluator::Module mod(drv, r.cubin);
  CUfunction f = mod.function("tile_exp2");

  std::vector<float> x;
  for (int i = 0; i <= 125 * 1024; ++i) x.push_back(-static_cast<float>(i) / 1024.f);  // every 1/1024 down to -125
  for (int i = 1; i <= 8 * 1024; ++i) x.push_back(static_cast<float>(i) / 1024.f);     // and up to 8 (a lazy maximum)
  for (float v : {-125.3f, -126.f, -140.f, -1e30f, -INFINITY}) x.push_back(v);
  const int n = static_cast<int>(x.size());
  evaluator::Buffer gx(&dev, n * 4), gp(&dev, n * 4), ga(&dev, n * 4);
  gx.upload(x.data(), n * 4);
  CUdeviceptr px = gx.ptr(), pp = gp.ptr(), pa = ga.ptr();
  void* args[4] = {&px, &pp, &pa, const_cast<int*>(&n)};
  const int grid[3] = {(n + 255) / 256, 1, 1}, block[3] = {256, 1, 1};
  dev.launch(f, grid, block, 0, args);
  dev.sync();
  std::vector<float> poly(n), approx(n);  // (approx: ex2.approx beside it, for a failure's message)
  auto bp = gp.download(), ba = ga.download();
  std::memcpy(poly.data(), bp.data(), n * 4);
  std::memcpy(approx.data(), ba.data(), n * 4);

  double worst = 0, worst_at = 0;
  for (int i = 0; i < n; ++i) {
    if (x[i] < -125.f) {
      EXPECT_GE(poly[i], 0.f) << x[i];
      EXPECT_LE(poly[i], std::ldexp(1.5f, -125)) << x[i];
      continue;
    }
    const double want = std::exp2(static_cast<double>(x[i]));
    const double e = std::abs(poly[i] / want - 1);
    if (e > worst) worst = e, worst_at = x[i];
  }
  int at = 0;
  while (at < n && x[at] != static_cast<float>(worst_at)) ++at;
  EXPECT_LT(worst, 1e-4) << "worst at x = " << worst_at << ": " << poly[at] << " (ex2.approx " << approx[at] << ")";
  EXPECT_GT(worst, 1e-6) << "a polynomial of degree 3 is not that exact: is exp2_poly still the polynomial?";
}
