// tests/gpu/import_kernels_test.cpp — the kernels grown for imported FlashInfer Trace
// definitions (issue 30) on the GPU, against their float64 references on awkward shapes:
// rmsnorm_rows_residual (fused add + rmsnorm, RESIDUAL 1) against
// rmsnorm_residual_reference, and the fp16 gemm (F16 1: gemm_mma_f16, and
// gemm_mma_splitk_f16 + gemm_splitk_reduce_f16) against gemm_reference_f16. Launches follow
// the shipped specs' plans (grid, block, dynamic shared memory; the residual kernel's
// SMEM_ROW row is fp32: SMEM_ROW * ROWS * N * 4 bytes). Every output buffer's guard zones
// must stay intact.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "evaluator/device.h"
#include "tests/support/gpu.h"

using namespace tessera;
namespace fs = std::filesystem;

namespace {

using Params = std::map<std::string, long long>;

codegen::CompileResult compile_target(const std::string& op, const std::string& file, const Params& params,
                                      const std::string& arch) {
  static codegen::Compiler compiler(fs::temp_directory_path() / "tessera-import-kernels");
  const fs::path dir = tessera::testing::source_dir() / "targets" / op;
  return compiler.compile({codegen::render(codegen::read_file((dir / file).string()), params),
                           file,
                           arch,
                           {dir, tessera::testing::source_dir() / "targets/common"},
                           {}});
}

std::uint16_t to_bf16(float f) {  // round to nearest even (finite inputs)
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}
float from_bf16(std::uint16_t h) {
  std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// sqrt(sum (got - want)^2 / sum want^2)
double rel_l2(const std::vector<double>& got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

std::vector<double> download_doubles(const evaluator::Buffer& b, size_t n) {
  auto bytes = b.download();
  std::vector<double> v(n);
  std::memcpy(v.data(), bytes.data(), n * 8);
  return v;
}

struct Gpu {
  std::shared_ptr<evaluator::Driver> drv;
  std::unique_ptr<evaluator::Device> dev;
  std::string arch;
};

// The GPU, or the reason the test is skipped (no GPU, or one without mma.sync's sm_80 forms
// in the templates' arch lists).
bool open_gpu(Gpu& g, std::string* why) {
  if (!tessera::testing::have_gpu(why)) return false;
  g.drv = evaluator::Driver::load(why);
  if (!g.drv) return false;
  g.dev = std::make_unique<evaluator::Device>(g.drv, 0);
  g.arch = g.dev->info().arch();
  if (g.arch != "sm_90a" && g.arch != "sm_100a" && g.arch != "sm_103a") {
    *why = "the gemm template targets sm_90a, sm_100a and sm_103a; this GPU is " + g.arch;
    return false;
  }
  return true;
}

void launch(Gpu& g, CUfunction f, long long gx, long long gy, long long gz, int block, long long smem, void** args) {
  if (smem > 48 * 1024)
    TESSERA_CU(g.dev->drv(),
               cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(smem)));
  const int grid[3] = {static_cast<int>(gx), static_cast<int>(gy), static_cast<int>(gz)}, blk[3] = {block, 1, 1};
  g.dev->launch(f, grid, blk, static_cast<unsigned>(smem), args);
}

long long cdiv(long long a, long long b) {
  return (a + b - 1) / b;
}

}  // namespace

TEST(ImportKernels, FusedAddRmsnormMatchesFloat64) {
  std::string why;
  Gpu g;
  if (!open_gpu(g, &why)) GTEST_SKIP() << "no suitable GPU, GPU test skipped: " << why;
  auto ref = compile_target("rmsnorm", "reference.cu", {}, g.arch);
  ASSERT_TRUE(ref.ok) << ref.log;
  evaluator::Module ref_mod(g.drv, ref.cubin);
  CUfunction fref = ref_mod.function("rmsnorm_residual_reference");

  // vector and scalar paths, the row kept in shared memory (fp32) or read again, 1 to 4 rows a block
  const std::vector<Params> configs = {
      {{"THREADS", 256}, {"ROWS", 2}, {"VEC", 8}, {"UNROLL", 2}, {"SMEM_ROW", 1}},
      {{"THREADS", 128}, {"ROWS", 1}, {"VEC", 8}, {"UNROLL", 1}, {"SMEM_ROW", 0}},
      {{"THREADS", 512}, {"ROWS", 4}, {"VEC", 4}, {"UNROLL", 4}, {"SMEM_ROW", 1}},
      {{"THREADS", 64}, {"ROWS", 1}, {"VEC", 2}, {"UNROLL", 2}, {"SMEM_ROW", 0}},
      {{"THREADS", 1024}, {"ROWS", 8}, {"VEC", 1}, {"UNROLL", 4}, {"SMEM_ROW", 0}},
  };
  const std::vector<std::pair<long long, long long>> shapes = {{1, 1}, {7, 1025}, {33, 4097}, {5, 4096}};
  const float eps = 1e-5f;
  std::mt19937 rng(20261203);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_real_distribution<float> uniform(0.5f, 1.5f);
  for (auto [M, N] : shapes) {
    std::vector<std::uint16_t> x(M * N), r(M * N), w(N);
    for (auto& e : x) e = to_bf16(normal(rng));
    for (auto& e : r) e = to_bf16(normal(rng));
    for (auto& e : w) e = to_bf16(uniform(rng));
    evaluator::Buffer bx(g.dev.get(), x.size() * 2), br(g.dev.get(), r.size() * 2), bw(g.dev.get(), w.size() * 2),
        by(g.dev.get(), x.size() * 2), bref(g.dev.get(), x.size() * 8);
    bx.upload(x.data(), x.size() * 2);
    br.upload(r.data(), r.size() * 2);
    bw.upload(w.data(), w.size() * 2);
    CUdeviceptr px = bx.ptr(), pr = br.ptr(), pw = bw.ptr(), py = by.ptr(), pref = bref.ptr();
    void* rargs[] = {&px, &pr, &pw, &pref, &M, &N, const_cast<float*>(&eps)};
    launch(g, fref, M, 1, 1, 256, 0, rargs);
    g.dev->sync();
    const std::vector<double> want = download_doubles(bref, x.size());
    for (auto params : configs) {
      params["RESIDUAL"] = 1;
      SCOPED_TRACE("M " + std::to_string(M) + " N " + std::to_string(N) + " THREADS " +
                   std::to_string(params["THREADS"]) + " ROWS " + std::to_string(params["ROWS"]) + " VEC " +
                   std::to_string(params["VEC"]) + " SMEM_ROW " + std::to_string(params["SMEM_ROW"]));
      auto c = compile_target("rmsnorm", "rmsnorm_rows.cu", params, g.arch);
      ASSERT_TRUE(c.ok) << c.log;
      evaluator::Module mod(g.drv, c.cubin);
      CUfunction f = mod.function("rmsnorm_rows_residual");
      TESSERA_CU(g.dev->drv(), cuMemsetD8(py, 0xff, x.size() * 2));
      void* args[] = {&px, &pr, &pw, &py, &M, &N, const_cast<float*>(&eps)};
      launch(g, f, cdiv(M, params["ROWS"]), 1, 1, static_cast<int>(params["THREADS"]),
             params["SMEM_ROW"] * params["ROWS"] * N * 4, args);
      g.dev->sync();
      auto bytes = by.download();
      std::vector<std::uint16_t> y(x.size());
      std::memcpy(y.data(), bytes.data(), y.size() * 2);
      std::vector<double> got(y.size());
      int beyond_ulp = 0;
      for (size_t i = 0; i < y.size(); ++i) {
        got[i] = from_bf16(y[i]);
        // The sum is fp32 and exact here, so each output is the float64 value rounded to
        // bf16 up to fp32 error: within one bf16 ulp (2^-7 of its binade).
        const double ulp = want[i] == 0 ? 0 : std::ldexp(1.0, std::ilogb(want[i]) - 7);
        beyond_ulp += !(std::fabs(got[i] - want[i]) <= ulp);
      }
      EXPECT_LE(rel_l2(got, want), 8e-3);
      EXPECT_EQ(beyond_ulp, 0) << "outputs more than one bf16 ulp from float64";
      EXPECT_TRUE(by.guards_intact()) << "wrote outside y";
    }
  }
}

TEST(ImportKernels, Fp16GemmMatchesFloat64) {
  std::string why;
  Gpu g;
  if (!open_gpu(g, &why)) GTEST_SKIP() << "no suitable GPU, GPU test skipped: " << why;
  auto ref = compile_target("gemm", "reference.cu", {}, g.arch);
  ASSERT_TRUE(ref.ok) << ref.log;
  evaluator::Module ref_mod(g.drv, ref.cubin);
  CUfunction fref = ref_mod.function("gemm_reference_f16");

  struct Config {
    Params p;
    bool splitk;
  };
  const std::vector<Config> configs = {
      {{{"BM", 128}, {"BN", 128}, {"BK", 32}, {"WM", 64}, {"WN", 64}, {"STAGES", 4}, {"GROUP_M", 8}}, false},
      {{{"BM", 64}, {"BN", 64}, {"BK", 64}, {"WM", 32}, {"WN", 32}, {"STAGES", 3}, {"GROUP_M", 1}}, false},
      {{{"BM", 64}, {"BN", 128}, {"BK", 32}, {"WM", 32}, {"WN", 64}, {"STAGES", 3}, {"GROUP_M", 8}, {"SPLITK", 3}},
       true},
  };
  struct Shape {
    long long M, N, K;
  };
  std::vector<Shape> shapes;
  for (long long M : {1, 5, 33, 129})
    for (auto [N, K] : std::vector<std::pair<long long, long long>>{{64, 64}, {72, 257}, {257, 520}, {520, 72}})
      shapes.push_back({M, N, K});
  shapes.push_back({256, 4096, 4096});

  std::vector<std::unique_ptr<evaluator::Module>> mods;
  std::vector<std::vector<CUfunction>> fns;
  for (auto& c : configs) {
    Params p = c.p;
    p["F16"] = 1;
    auto r = compile_target("gemm", "gemm_mma.cu", p, g.arch);
    ASSERT_TRUE(r.ok) << r.log;
    mods.push_back(std::make_unique<evaluator::Module>(g.drv, r.cubin));
    if (c.splitk)
      fns.push_back({mods.back()->function("gemm_mma_splitk_f16"), mods.back()->function("gemm_splitk_reduce_f16")});
    else
      fns.push_back({mods.back()->function("gemm_mma_f16")});
  }

  std::mt19937 rng(4096);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (auto s : shapes) {
    long long M = s.M, N = s.N, K = s.K;
    std::vector<_Float16> a(M * K), b(N * K);
    for (auto& e : a) e = static_cast<_Float16>(normal(rng));
    for (auto& e : b) e = static_cast<_Float16>(normal(rng));
    evaluator::Buffer ba(g.dev.get(), a.size() * 2), bb(g.dev.get(), b.size() * 2), bc(g.dev.get(), M * N * 2),
        bref(g.dev.get(), M * N * 8), bws(g.dev.get(), 8 * M * N * 4);
    ba.upload(a.data(), a.size() * 2);
    bb.upload(b.data(), b.size() * 2);
    CUdeviceptr pa = ba.ptr(), pb = bb.ptr(), pc = bc.ptr(), pref = bref.ptr(), pws = bws.ptr();
    void* rargs[] = {&pa, &pb, &pref, &M, &N, &K};
    launch(g, fref, cdiv(N, 128), cdiv(M, 128), 1, 256, 0, rargs);
    g.dev->sync();
    const std::vector<double> want = download_doubles(bref, M * N);
    for (size_t ci = 0; ci < configs.size(); ++ci) {
      const Params& p = configs[ci].p;
      SCOPED_TRACE("M " + std::to_string(M) + " N " + std::to_string(N) + " K " + std::to_string(K) + " config " +
                   std::to_string(ci));
      const long long BM = p.at("BM"), BN = p.at("BN"), BK = p.at("BK");
      const int threads = static_cast<int>((BM / p.at("WM")) * (BN / p.at("WN")) * 32);
      const long long smem = p.at("STAGES") * (BM + BN) * BK * 2;
      TESSERA_CU(g.dev->drv(), cuMemsetD8(pc, 0xff, M * N * 2));
      if (configs[ci].splitk) {
        void* args[] = {&pa, &pb, &pws, &M, &N, &K};
        launch(g, fns[ci][0], cdiv(M, BM) * cdiv(N, BN), 1, p.at("SPLITK"), threads, smem, args);
        void* rd[] = {&pws, &pc, &M, &N};
        launch(g, fns[ci][1], cdiv(M * N, 1024), 1, 1, 256, 0, rd);
      } else {
        void* args[] = {&pa, &pb, &pc, &M, &N, &K};
        launch(g, fns[ci][0], cdiv(M, BM) * cdiv(N, BN), 1, 1, threads, smem, args);
      }
      g.dev->sync();
      auto bytes = bc.download();
      std::vector<_Float16> c(M * N);
      std::memcpy(c.data(), bytes.data(), c.size() * 2);
      std::vector<double> got(c.begin(), c.end());
      const double err = rel_l2(got, want);
      EXPECT_LE(err, 1e-2);
      // fp16 rounding of C alone is ~3e-4 (bf16's would be ~2.3e-3): C is rounded as fp16
      EXPECT_LE(err, 1e-3) << "rel_l2 " << err;
      EXPECT_TRUE(bc.guards_intact()) << "wrote outside C";
    }
  }
}
